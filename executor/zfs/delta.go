package zfs

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A delta is what the send streams of a move changed in its dataset
// since the snapshot it last verified, as ZFS itself says in the streams
// (DMU replay records): per object (a file's inode number is its object
// number), the byte ranges written or freed, and the objects created
// since. The switch's checksum re-reads only those ranges of a file it
// verified before (checksum.go); a stream it does not understand makes
// the delta unknown, and then it re-reads every changed file whole.
type delta struct {
	known   bool
	since   uint64            // the verified snapshot's txg (createtxg) on the source
	touched map[uint64][]span // object: ranges written or freed (span.free)
	created map[uint64]bool   // objects (re)allocated after the verified snapshot
	freed   []span            // ranges of objects freed (and maybe reused)
}

// span is a byte range; end ^uint64(0) means to the end of the file.
// free: ZFS freed it (it reads as zeros), not wrote it.
type span struct {
	off, end uint64
	free     bool
}

func newDelta() *delta {
	return &delta{known: true, touched: map[uint64][]span{}, created: map[uint64]bool{}}
}

// The DMU replay record of the streams of ZFS pool version 28 and
// before (zfs-fuse's): 8 bytes of type and payload length, then a union
// whose largest member, drr_begin, ends with a 256-byte name.
const (
	drrSize      = 312
	drrBegin     = 0
	drrObject    = 1
	drrFreeObjs  = 2
	drrWrite     = 3
	drrFree      = 4
	drrEnd       = 5
	drrWriteRef  = 6
	drrMagic     = 0x2f5bacbac
	otZnode      = 17 // DMU_OT_ZNODE: a ZPL file's bonus is its znode_phys_t
	znodeGenOff  = 64 // znode_phys_t.zp_gen: the txg the object was created in
	znodeGenSize = 72
)

// streamReader follows a send stream as it is written (an io.Writer
// beside the stream's destination) and adds what it changes in dataset
// ds to d: an object whose generation (its creation txg) is later than
// d.since was created since. It never fails the write: what it cannot
// follow makes d unknown.
type streamReader struct {
	d       *delta
	ds      string
	hdr     [drrSize]byte
	have    int    // bytes of hdr filled
	skip    uint64 // payload bytes still to pass over
	bonus   []byte // a znode's first bytes, for DRR_OBJECT
	obj     uint64 // the object of the DRR_OBJECT being read
	ours    bool   // the current substream is ds's
	stopped bool
}

func (s *streamReader) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && !s.stopped {
		if s.skip > 0 {
			k := min(uint64(len(p)), s.skip)
			if s.bonus != nil && len(s.bonus) < znodeGenSize {
				s.bonus = append(s.bonus, p[:min(int(k), znodeGenSize-len(s.bonus))]...)
			}
			p, s.skip = p[k:], s.skip-k
			if s.skip == 0 {
				s.objectDone()
			}
			continue
		}
		k := copy(s.hdr[s.have:], p)
		p, s.have = p[k:], s.have+k
		if s.have == drrSize {
			s.have = 0
			s.record()
		}
	}
	return n, nil
}

// unknown gives up: the delta says nothing any more.
func (s *streamReader) unknown() {
	s.d.known, s.stopped = false, true
}

func (s *streamReader) u64(off int) uint64 { return binary.LittleEndian.Uint64(s.hdr[off:]) }
func (s *streamReader) u32(off int) uint32 { return binary.LittleEndian.Uint32(s.hdr[off:]) }

// record takes in one record header and sets up its payload's skip.
func (s *streamReader) record() {
	switch s.u32(0) {
	case drrBegin:
		if s.u64(8) != drrMagic {
			s.unknown() // another byte order or not a stream
			return
		}
		name := string(s.hdr[56:])
		name, _, _ = strings.Cut(name, "\x00")
		ds, _, _ := strings.Cut(name, "@")
		s.ours = ds == s.ds
		s.skip = uint64(s.u32(4)) // a compound stream's nvlist
	case drrObject:
		bonusLen := uint64(s.u32(28))
		s.skip = (bonusLen + 7) &^ 7
		if s.ours {
			s.obj = s.u64(8)
			s.bonus = nil
			if s.u32(20) == otZnode && bonusLen >= znodeGenSize {
				s.bonus = make([]byte, 0, znodeGenSize)
			} else {
				s.d.created[s.obj] = true // no generation to go by: read it whole
			}
			if s.skip == 0 {
				s.objectDone()
			}
		}
	case drrFreeObjs:
		if first, n := s.u64(8), s.u64(16); s.ours && n > 0 {
			end := first + n
			if end < first {
				end = ^uint64(0)
			}
			s.d.freed = append(s.d.freed, span{off: first, end: end})
		}
	case drrWrite:
		if s.ours {
			s.touch(s.u64(8), s.u64(24), s.u64(32), false)
		}
		s.skip = s.u64(32)
	case drrWriteRef:
		if s.ours {
			s.touch(s.u64(8), s.u64(16), s.u64(24), false)
		}
	case drrFree:
		if s.ours {
			s.touch(s.u64(8), s.u64(16), s.u64(24), true)
		}
	case drrEnd:
	default:
		s.unknown() // a record this reader does not know (spill, ...)
	}
}

// objectDone ends a DRR_OBJECT: its generation says whether it is new.
func (s *streamReader) objectDone() {
	if s.bonus == nil {
		return
	}
	if len(s.bonus) < znodeGenSize || binary.LittleEndian.Uint64(s.bonus[znodeGenOff:]) > s.d.since {
		s.d.created[s.obj] = true
	}
	s.bonus = nil
}

func (s *streamReader) touch(obj, off, length uint64, free bool) {
	end := off + length
	if length == ^uint64(0) || end < off {
		end = ^uint64(0)
	}
	s.d.touched[obj] = append(s.d.touched[obj], span{off, end, free})
}

// fresh says whether object ino must be read whole: created since the
// verified snapshot, or the delta unknown.
func (d *delta) fresh(ino uint64) bool {
	if d == nil || !d.known || d.created[ino] {
		return true
	}
	for _, f := range d.freed {
		if ino >= f.off && ino < f.end {
			return true
		}
	}
	return false
}

// deltaWire is a delta in a checksum request to the target.
type deltaWire struct {
	Touched map[string][][3]uint64 `json:"touched"` // off, end, 1 if freed
	Created []uint64               `json:"created"`
	Freed   [][2]uint64            `json:"freed"`
}

// encode is d for the target; "" when it says nothing (nil or unknown).
func (d *delta) encode() string {
	if d == nil || !d.known {
		return ""
	}
	w := deltaWire{Touched: map[string][][3]uint64{}}
	for o, ss := range d.touched {
		k := strconv.FormatUint(o, 10)
		for _, s := range ss {
			free := uint64(0)
			if s.free {
				free = 1
			}
			w.Touched[k] = append(w.Touched[k], [3]uint64{s.off, s.end, free})
		}
	}
	for o := range d.created {
		w.Created = append(w.Created, o)
	}
	slices.Sort(w.Created)
	for _, f := range d.freed {
		w.Freed = append(w.Freed, [2]uint64{f.off, f.end})
	}
	b, _ := json.Marshal(w)
	return string(b)
}

// decodeDelta reads an encoded delta; "" is none (nil).
func decodeDelta(s string) (*delta, error) {
	if s == "" {
		return nil, nil
	}
	var w deltaWire
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return nil, fmt.Errorf("zfs: the checksum request's delta: %w", err)
	}
	d := newDelta()
	for k, ss := range w.Touched {
		o, err := strconv.ParseUint(k, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("zfs: the checksum request's delta: object %q", k)
		}
		for _, s := range ss {
			d.touched[o] = append(d.touched[o], span{s[0], s[1], s[2] != 0})
		}
	}
	for _, o := range w.Created {
		d.created[o] = true
	}
	for _, f := range w.Freed {
		d.freed = append(d.freed, span{off: f[0], end: f[1]})
	}
	return d, nil
}
