package zfsenv

import (
	"os"
	"regexp"
	"testing"
	"time"
)

// waits names what each thread of a process waits in, counted.
func TestWaitsCountsThreadsByWchan(t *testing.T) {
	got := waits(os.Getpid())
	if !regexp.MustCompile(`^\d+ \S+(, \d+ \S+)*$`).MatchString(got) {
		t.Fatalf("waits of this test: %q", got)
	}
}

// within gives up on a look that blocks (a /proc read of a process stuck
// in a dead FUSE mount) and says so with its late value.
func TestWithinGivesUpOnABlockedLook(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	if got := within(10*time.Millisecond, func() int { <-block; return 1 }, -1); got != -1 {
		t.Fatalf("a blocked look gave %d, want -1", got)
	}
	if got := within(time.Second, func() int { return 7 }, -1); got != 7 {
		t.Fatalf("a quick look gave %d, want 7", got)
	}
}
