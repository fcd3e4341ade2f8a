package zfsenv

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// recorder is a test as Pool sees it, whose errors and cleanups are kept
// for the real test to check: the watchdog must fail the test whose
// daemon died, and this test must not fail for it.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
	r.TB.Logf("recorded error: "+format, args...)
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

// end runs the cleanups as the test's end would, last first.
func (r *recorder) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func (r *recorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// The daemon dying under a test's pools (as it did once mid-run here,
// with nothing in the kernel's log) fails that test with the marker the
// test runner retries on, and leaves a daemon that answers and no dead
// mount behind. It kills the shared daemon, so make test runs it alone
// (test/tools/zfs-tests.sh).
func TestWatchdogStartsADeadDaemonAgain(t *testing.T) {
	r := &recorder{TB: t}
	pool := Pool(r, "watchdog", 64)
	pid := DaemonPid()
	if pid == 0 {
		t.Fatal("no zfs-fuse runs under a pool")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(4 * probeEvery)
	for len(r.errors()) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // polling the watchdog with a deadline
	}
	if len(r.errors()) == 0 {
		t.Fatalf("the watchdog said nothing %s after zfs-fuse (pid %d) was killed", 4*probeEvery, pid)
	}
	r.end() // the pool's cleanup fails (its daemon died); the watchdog's reports nothing more
	errs := r.errors()
	if !strings.Contains(errs[0], RestartMarker) || !strings.Contains(errs[0], "died during the test") {
		t.Errorf("the first error does not name the daemon's death: %q", errs[0])
	}
	if n := DaemonPid(); n == 0 || n == pid {
		t.Errorf("zfs-fuse after the watchdog: pid %d (killed: %d)", n, pid)
	}
	if err := zpoolWorks(); err != nil {
		t.Errorf("zfs-fuse does not answer after the watchdog: %v", err)
	}
	if out, _ := exec.Command("zpool", "list", "-H", "-o", "name").Output(); strings.Contains(string(out), pool) {
		t.Errorf("the dead daemon's pool %s is imported again", pool)
	}
	if mounts, _ := os.ReadFile("/proc/mounts"); strings.Contains(string(mounts), "/"+pool) {
		t.Errorf("the dead daemon's mount of %s stays", pool)
	}
}

// A test whose daemon lived throughout is not failed by the watchdog.
func TestWatchdogQuietWhileTheDaemonLives(t *testing.T) {
	r := &recorder{TB: t}
	Pool(r, "watchdog", 64)
	r.end()
	if errs := r.errors(); len(errs) > 0 {
		t.Errorf("errors with a live daemon: %q", errs)
	}
}
