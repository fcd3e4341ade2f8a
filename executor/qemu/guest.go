package qemu

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"os"
)

// Workload is what the tiny test guest of WriteGuestDisk does.
type Workload int

const (
	// Idle leaves the disk unbootable: only the firmware runs.
	Idle Workload = iota
	// FillOnce writes a counter into every page from 1 MiB up to the end
	// of the region once and halts, so a migration moves real, settled
	// memory and converges.
	FillOnce
	// FillForever rewrites every page of the region in a loop, dirtying
	// memory faster than a capped pre-copy can send it.
	FillForever
)

// bootProgram is guestboot/boot.S assembled (guestboot/build.sh): the
// test guest, 4 sectors from the first one, which SeaBIOS boots.
//
//go:embed guestboot/boot.bin
var bootProgram []byte

// Where guest.go patches the program's parameters (see boot.S).
const (
	tlOffset      = 0x1d8 // first LBA of the timeline of clock stamps; 0: none
	tlSecsOffset  = 0x1dc // sectors in the timeline
	endOffset     = 0x1e0 // first address the rounds do not write
	tpcOffset     = 0x1e4 // HPET ticks per disk chunk; 0: no disk writes
	chunkOffset   = 0x1e8 // sectors per chunk
	ringOffset    = 0x1ec // first LBA of the chunks' ring
	slotsOffset   = 0x1f0 // chunks in the ring
	hdrOffset     = 0x1f4 // LBA of the header sector
	foreverOffset = 0x1f8 // non-zero loops forever
	flushOffset   = 0x1fa // chunks per CACHE FLUSH (16 bits)
)

// The guest's disk layout: the program in the first sectors, the
// timeline of its clock stamps in the second half of the first MiB, the
// header in its last sector, the ring of chunks after it.
const (
	hpetHz          = 100_000_000 // QEMU's HPET counts 10 ns ticks
	chunkSectors    = 128         // 64 KiB per chunk
	chunkBytes      = chunkSectors * 512
	timelineLBA     = 1024
	timelineSectors = headerLBA - timelineLBA // 16 stamps a sector
	headerLBA       = 2047
	ringLBA         = 2048
)

// Guest is the stand-in for an OS in tests and benchmarks: a VM needs
// none to run, and this one makes its memory real and, if asked, writes
// its disk itself.
type Guest struct {
	// MemoryMiB is the VM's RAM; the rounds write all but its first and
	// last 8 MiB (where the firmware keeps its tables). At least 16.
	MemoryMiB int64
	Workload  Workload
	// DiskBytesPerSecond is how fast the guest writes its disk, in chunks
	// of 64 KiB paced by the guest's clock (which stands still while the
	// VM is paused); 0 writes nothing. It speaks to the pc machine's IDE
	// controller (a chunk in one bus-master DMA transfer, the header by
	// PIO), so the disk must be on IDE (Config.DiskBus "ide").
	DiskBytesPerSecond int64
	// FlushEvery is how many chunks go between two CACHE FLUSH commands
	// (each an fdatasync of the image, costly on zfs-fuse); 0 means 1.
	// The header follows every chunk either way.
	FlushEvery int
}

// WriteGuestDisk writes a raw disk image of sizeMiB at path whose first
// sectors boot a guest doing w over the RAM of a memoryMiB VM, writing
// nothing to its disk.
func WriteGuestDisk(path string, sizeMiB int64, memoryMiB int64, w Workload) error {
	return Guest{MemoryMiB: memoryMiB, Workload: w}.WriteDisk(path, sizeMiB)
}

// WriteDisk writes a raw disk image of sizeMiB at path that boots g.
// The guest's disk writes go round a ring over the image past its first
// MiB (ReadGuestWrites checks them); their clock stamps go to a timeline
// in the first MiB too, which keeps minutes of them however small the
// ring (GuestDowntime reads it).
func (g Guest) WriteDisk(path string, sizeMiB int64) error {
	if g.MemoryMiB < 16 {
		return fmt.Errorf("qemu: guest needs at least 16 MiB, got %d", g.MemoryMiB)
	}
	slots := (sizeMiB<<20 - ringLBA*512) / chunkBytes
	var tpc int64
	if g.DiskBytesPerSecond > 0 {
		if slots < 2 {
			return fmt.Errorf("qemu: a writing guest needs a disk of at least 2 MiB, got %d", sizeMiB)
		}
		tpc = hpetHz * chunkBytes / g.DiskBytesPerSecond
		if tpc < 1 || tpc > 1<<32-1 {
			return fmt.Errorf("qemu: the guest writes between 2 KB/s and 6 TB/s, not %d B/s", g.DiskBytesPerSecond)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(sizeMiB << 20); err != nil {
		return err
	}
	if g.Workload == Idle {
		return f.Close()
	}
	prog := append([]byte(nil), bootProgram...)
	put := func(off int, v int64) { binary.LittleEndian.PutUint32(prog[off:], uint32(v)) }
	put(endOffset, (g.MemoryMiB-8)<<20)
	put(tpcOffset, tpc)
	put(chunkOffset, chunkSectors)
	put(ringOffset, ringLBA)
	put(slotsOffset, slots)
	put(hdrOffset, headerLBA)
	put(tlOffset, timelineLBA)
	put(tlSecsOffset, timelineSectors)
	if g.Workload == FillForever {
		prog[foreverOffset] = 1
	}
	binary.LittleEndian.PutUint16(prog[flushOffset:], uint16(min(max(g.FlushEvery, 1), 1<<16-1)))
	if _, err := f.WriteAt(prog, 0); err != nil {
		return err
	}
	return f.Close()
}
