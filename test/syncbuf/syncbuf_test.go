package syncbuf_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/drovehq/drove/test/syncbuf"
)

// Writers and a reader running at once lose no line and split none
// (run under -race, this is also the check that they may run at once).
func TestConcurrentWritesKeepEveryLine(t *testing.T) {
	var b syncbuf.Buffer
	var wg sync.WaitGroup
	const writers, lines = 4, 200
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < lines; i++ {
				b.Write([]byte("a whole line\n"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("%d lines, want %d", len(got), writers*lines)
	}
	for _, l := range got {
		if l != "a whole line" {
			t.Fatalf("line %q, want whole lines only", l)
		}
	}
}
