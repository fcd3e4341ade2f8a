package zfsenv

import (
	"os"
	"regexp"
	"testing"
)

// waits names what each thread of a process waits in, counted.
func TestWaitsCountsThreadsByWchan(t *testing.T) {
	got := waits(os.Getpid())
	if !regexp.MustCompile(`^\d+ \S+(, \d+ \S+)*$`).MatchString(got) {
		t.Fatalf("waits of this test: %q", got)
	}
}
