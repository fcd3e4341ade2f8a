package zfs

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// The send loop hands the stream whole chunks however the pipe's reads
// split the stream (zfs-fuse writes record headers apart, a few hundred
// bytes each), and the rest at the end; a read's failure is the copy's.
func TestCopyFullHandsOnWholeChunks(t *testing.T) {
	t.Parallel()
	src := bytes.Repeat([]byte("0123456789abcdef"), (3*sendChunk+1000)/16)
	var w chunks
	n, err := copyFull(&w, iotest.HalfReader(bytes.NewReader(src)))
	if err != nil || n != int64(len(src)) || !bytes.Equal(bytes.Join(w, nil), src) {
		t.Fatalf("copied %d of %d bytes, err %v", n, len(src), err)
	}
	for i, c := range w[:len(w)-1] {
		if len(c) != sendChunk {
			t.Fatalf("write %d of %d is %d bytes, want %d", i, len(w), len(c), sendChunk)
		}
	}
	broken := errors.New("pipe closed")
	if _, err := copyFull(&w, io.MultiReader(bytes.NewReader(src[:100]), iotest.ErrReader(broken))); !errors.Is(err, broken) {
		t.Fatalf("a failed read copied on: %v", err)
	}
}

// chunks keeps each write apart.
type chunks [][]byte

func (c *chunks) Write(p []byte) (int, error) {
	*c = append(*c, bytes.Clone(p))
	return len(p), nil
}
