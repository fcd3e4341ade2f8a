package qemu

import (
	"encoding/binary"
	"fmt"
	"os"
)

// GuestWrites is what a writing Guest's disk says it wrote.
type GuestWrites struct {
	// Chunks is how many chunks the guest wrote and flushed, the last one
	// named by its header; 0 when it wrote none.
	Chunks uint32
	// Round is the guest's round counter (the word at 0x100000) when it
	// wrote the last of them; it starts again at 1 when the guest boots
	// again, the chunks going on from the header's.
	Round uint32
}

const (
	dataMagic   = 0x44475244 // "DRGD"
	headerMagic = 0x48475244 // "DRGH"
	stampMagic  = 0x54475244 // "DRGT"
)

// ReadGuestWrites reads the disk image a writing Guest wrote (a file, or
// a copy of it) and checks every byte of it against the header: each
// ring slot holds the newest chunk the header's count puts there, whole
// and in order, or nothing if none went there yet; only the slot of the
// chunk after the last may be half written (the guest stopped, or was
// paused, while writing it). A guest booted again on the disk goes on
// from the header's count, so the check holds across reboots too.
func ReadGuestWrites(path string) (GuestWrites, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return GuestWrites{}, err
	}
	if len(b) < ringLBA*512+2*chunkBytes {
		return GuestWrites{}, fmt.Errorf("qemu: %s: %d bytes, too small for a writing guest", path, len(b))
	}
	var w GuestWrites
	h := b[headerLBA*512 : ringLBA*512]
	if u32(h, 0) != 0 || u32(h, 4) != 0 {
		if u32(h, 0) != headerMagic || u32(h, 12) != headerLBA {
			return w, fmt.Errorf("qemu: %s: not a guest's header: % x", path, h[:16])
		}
		w.Chunks, w.Round = u32(h, 4)+1, u32(h, 8)
	}
	slots := uint32((len(b) - ringLBA*512) / chunkBytes)
	for k := uint32(0); k < slots; k++ {
		if err := w.checkSlot(b, k, slots); err != nil {
			return w, fmt.Errorf("qemu: %s: %w", path, err)
		}
	}
	return w, nil
}

// checkSlot checks ring slot k: every sector holds the newest chunk the
// header puts there, or (the slot of the chunk after the last) that
// chunk or the one before it in the slot.
func (w GuestWrites) checkSlot(b []byte, k, slots uint32) error {
	want, has := int64(-1), false // the newest chunk in slot k, -1 none
	if w.Chunks > 0 {
		last := int64(w.Chunks) - 1
		if n := last - (last-int64(k)+int64(slots))%int64(slots); n >= 0 {
			want, has = n, true
		}
	}
	next := int64(w.Chunks) // the chunk the guest may have been writing
	torn := next%int64(slots) == int64(k)
	for i := uint32(0); i < chunkSectors; i++ {
		lba := ringLBA + k*chunkSectors + i
		s := b[lba*512 : lba*512+512]
		seq, ok, err := sector(s, lba, i == 0)
		if err != nil {
			return err
		}
		switch {
		case torn && ok && int64(seq) == next:
		case !ok && !has:
		case ok && has && int64(seq) == want:
			if r := u32(s, 8); seq == w.Chunks-1 && r != w.Round {
				return fmt.Errorf("chunk %d at LBA %d from round %d, the header says round %d", seq, lba, r, w.Round)
			}
		default:
			return fmt.Errorf("LBA %d (slot %d) holds chunk %d (written %v); the header's %d chunks put chunk %d (%v) there",
				lba, k, seq, ok, w.Chunks, want, has)
		}
	}
	return nil
}

// sector checks one ring sector: all zeros (ok false), or a chunk's
// sector for lba with its whole pattern (ok true, its chunk number). A
// chunk's first sector (first) holds its clock stamp in words 4..7
// instead of the pattern.
func sector(s []byte, lba uint32, first bool) (seq uint32, ok bool, err error) {
	if u32(s, 0) == 0 {
		for _, c := range s {
			if c != 0 {
				return 0, false, fmt.Errorf("LBA %d: neither empty nor a guest's sector", lba)
			}
		}
		return 0, false, nil
	}
	seq = u32(s, 4)
	if u32(s, 0) != dataMagic || u32(s, 12) != lba {
		return 0, false, fmt.Errorf("LBA %d: not the guest's sector for it: % x", lba, s[:16])
	}
	base := seq*0x9e3779b1 + lba*128
	from := uint32(4)
	if first {
		if u32(s, 28) != stampMagic {
			return 0, false, fmt.Errorf("LBA %d: chunk %d's first sector has no clock stamp: % x", lba, seq, s[16:32])
		}
		from = 8
	}
	for i := from; i < 128; i++ {
		if u32(s, int(i*4)) != base+i {
			return 0, false, fmt.Errorf("LBA %d: word %d of chunk %d is %#x, want %#x", lba, i, seq, u32(s, int(i*4)), base+i)
		}
	}
	return seq, true, nil
}

func u32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
