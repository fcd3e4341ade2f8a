package transfer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// reader is a sealedConn reading data with the fixed key, as a receiver
// whose sender sealed with it.
func reader(t testing.TB, data []byte) *sealedConn {
	in, err := keyedSealer(bytes.Repeat([]byte{7}, 16))
	if err != nil {
		t.Fatal(err)
	}
	return &sealedConn{in: in, br: bufio.NewReader(bytes.NewReader(data)), rec: make([]byte, maxRecord+sealOverhead)}
}

// sealed is pieces sealed in order with the fixed key.
func sealed(t testing.TB, pieces ...[]byte) []byte {
	out, err := keyedSealer(bytes.Repeat([]byte{7}, 16))
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, p := range pieces {
		b = out.seal(b, p)
	}
	return b
}

func TestSealedRecordsReadBackInOrder(t *testing.T) {
	big := bytes.Repeat([]byte("frame "), maxRecord/6)
	data := sealed(t, []byte("one\n"), big, []byte("three"))
	got, err := io.ReadAll(reader(t, data))
	if err != nil {
		t.Fatal(err)
	}
	if want := append(append([]byte("one\n"), big...), "three"...); !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, want %d", len(got), len(want))
	}
	dropped := data[len(sealed(t, []byte("one\n"))):]
	if _, err := io.ReadAll(reader(t, dropped)); !errors.Is(err, ErrSealed) {
		t.Fatalf("a stream missing its first record read with %v, want ErrSealed", err)
	}
}

// Whatever arrives, a reader never panics, never hands on a byte that
// did not open, and stops at the first record that fails.
func FuzzSealedRecords(f *testing.F) {
	f.Add(sealed(f, []byte("DROVE-XFER/1\n{}\n")))
	f.Add(sealed(f, []byte{0, 0, 0, 4}, []byte("body"), []byte{0, 0, 0, 0}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3})
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := reader(t, data)
		var got []byte
		for {
			p, err := c.record(c.rec)
			if err != nil {
				break
			}
			got = append(got, p...)
		}
		if len(got) > len(data) {
			t.Fatalf("%d bytes of plaintext from %d bytes", len(got), len(data))
		}
		// What opened is exactly what sealing it again gives: no byte
		// came from anywhere but a whole, authentic record.
		if len(got) > 0 && !bytes.HasPrefix(data, sealedLike(t, data, got)) {
			t.Fatal("the plaintext handed on does not seal to the bytes read")
		}
	})
}

// sealedLike seals got in the record sizes data's headers name.
func sealedLike(t *testing.T, data, got []byte) []byte {
	var pieces [][]byte
	for off := 0; len(got) > 0; off += 4 + len(pieces[len(pieces)-1]) + sealOverhead {
		n := int(binary.BigEndian.Uint32(data[off:]))
		pieces = append(pieces, got[:n])
		got = got[n:]
	}
	return sealed(t, pieces...)
}
