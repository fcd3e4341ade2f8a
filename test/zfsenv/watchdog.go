package zfsenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// zfs-fuse, the ZFS this machine has, can deadlock inside its daemon when
// several nodes' worth of work runs in it at once: seen here with one
// thread holding the daemon's global lock while it waits on the daemon's
// own internal pipe, and every FUSE request, zfs and zpool command
// queued behind it. Production nodes each run their own kernel ZFS; the
// tests run two or three simulated nodes in one zfs-fuse. A deadlocked
// daemon never recovers and would hang every later test, so a watchdog
// probes it while a test uses pools; when it stops answering it is
// restarted, the test fails saying so, and DeadlockMarker is printed for
// the test runner (test/tools/zfs-tests.sh), which runs the package again
// once.

// DeadlockMarker is printed on standard error when the watchdog restarts
// a deadlocked zfs-fuse.
const DeadlockMarker = "ZFSENV: zfs-fuse deadlocked and was restarted"

const (
	probeEvery   = 5 * time.Second
	probeTimeout = 15 * time.Second
	deadAfter    = 2 // consecutive unanswered probes
)

var watched sync.Map // *testing.T → struct{}: one watchdog per test

// watch probes the daemon while t runs.
func watch(t testing.TB) {
	if _, dup := watched.LoadOrStore(t, struct{}{}); dup {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		missed := 0
		tick := time.NewTicker(probeEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			err := exec.CommandContext(pctx, "zpool", "list", "-H", "-o", "name").Run()
			cancel()
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				missed = 0
				continue
			}
			if missed++; missed < deadAfter {
				continue
			}
			restartDaemon()
			fmt.Fprintln(os.Stderr, DeadlockMarker)
			t.Errorf("%s: zpool did not answer for %s; the daemon was killed and started again (the ZFS stand-in failed, not necessarily the code under test)",
				DeadlockMarker, time.Duration(deadAfter)*(probeEvery+probeTimeout))
			return
		}
	}()
	// Registered before the pools' cleanups, so it runs after them: a
	// cleanup that hangs on a deadlocked daemon is still rescued.
	t.Cleanup(func() {
		stop()
		<-done
		watched.Delete(t)
	})
}

// restartDaemon kills zfs-fuse, detaches the mounts it served (their
// callers get an error instead of waiting for ever), forgets the pools
// (their files are this run's; the next CreatePool makes new ones) and
// starts it again.
func restartDaemon() {
	_ = exec.Command("pkill", "-9", "-x", "zfs-fuse").Run()
	time.Sleep(500 * time.Millisecond)
	if out, err := os.ReadFile("/proc/mounts"); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) > 1 && strings.HasPrefix(f[1], "/drove_") {
				_ = exec.Command("umount", "-l", f[1]).Run()
			}
		}
	}
	for _, c := range []string{"/var/lib/zfs/zpool.cache", "/etc/zfs/zpool.cache"} {
		_ = os.Remove(c)
	}
	_ = ensureDaemon()
}
