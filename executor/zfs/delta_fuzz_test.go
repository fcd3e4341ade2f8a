package zfs

import (
	"encoding/binary"
	"testing"
)

// decodeDelta reads what encode wrote, and anything else without panic.
func FuzzDecodeDelta(f *testing.F) {
	d := newDelta()
	d.touched[7] = []span{{0, 131072, false}, {5, ^uint64(0), true}}
	d.created[9] = true
	d.freed = []span{{off: 100, end: 200}}
	f.Add(d.encode())
	f.Add(`{"touched":{"x":[[1,2]]}}`)
	f.Add(`{"touched":{"3":[[1,2,1]]},"created":[1,2],"freed":[[0,1]]}`)
	f.Fuzz(func(t *testing.T, s string) {
		d, err := decodeDelta(s)
		if err != nil || d == nil {
			return
		}
		again, err := decodeDelta(d.encode())
		if err != nil || again.encode() != d.encode() {
			t.Fatalf("%q: re-encoded %q, %v", s, d.encode(), err)
		}
	})
}

// The stream reader takes any bytes, in any pieces, without panic, and
// a record it does not know makes the delta unknown.
func FuzzStreamReader(f *testing.F) {
	rec := func(typ uint32, fill func(b []byte)) []byte {
		b := make([]byte, drrSize)
		binary.LittleEndian.PutUint32(b, typ)
		if fill != nil {
			fill(b)
		}
		return b
	}
	begin := rec(drrBegin, func(b []byte) {
		binary.LittleEndian.PutUint64(b[8:], drrMagic)
		copy(b[56:], "p/d@s")
	})
	write := rec(drrWrite, func(b []byte) {
		binary.LittleEndian.PutUint64(b[8:], 5)
		binary.LittleEndian.PutUint64(b[24:], 4096)
		binary.LittleEndian.PutUint64(b[32:], 16)
	})
	stream := append(append(append(begin, write...), make([]byte, 16)...), rec(drrEnd, nil)...)
	f.Add(stream, 7)
	f.Add(append(begin, rec(99, nil)...), 1)
	f.Fuzz(func(t *testing.T, b []byte, piece int) {
		d := newDelta()
		s := &streamReader{d: d, ds: "p/d"}
		piece = max(piece%1000, 1)
		for len(b) > 0 {
			k := min(piece, len(b))
			if n, err := s.Write(b[:k]); n != k || err != nil {
				t.Fatalf("wrote %d of %d: %v", n, k, err)
			}
			b = b[k:]
		}
		_ = d.fresh(5)
	})
}
