package zfsenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// zfs-fuse, the ZFS this machine has, can deadlock inside its daemon when
// several nodes' worth of work runs in it at once: seen here with one
// thread holding the daemon's global lock while it waits on the daemon's
// own internal pipe, and every FUSE request, zfs and zpool command
// queued behind it. It has also died mid-run on its own (see DaemonLog).
// Production nodes each run their own kernel ZFS; the tests run two or
// three simulated nodes in one zfs-fuse. A deadlocked daemon never
// recovers and would hang every later test, and a dead one leaves every
// pool's mount dead, so a watchdog probes it while a test uses pools:
// when it stops answering it is restarted, when it died it is started
// again, and either way the test fails saying so and RestartMarker is
// printed for the test runner (test/tools/zfs-tests.sh), which runs the
// package again (at most three times).

// RestartMarker is printed on standard error when the watchdog finds
// zfs-fuse deadlocked or dead during a test.
const RestartMarker = "ZFSENV: zfs-fuse failed and was restarted"

const (
	probeEvery   = 5 * time.Second
	probeTimeout = 15 * time.Second
	deadAfter    = 2 // consecutive unanswered probes
)

var watched sync.Map // *testing.T → struct{}: one watchdog per test

// watch probes the daemon while t runs, and checks at t's end that the
// daemon it started with still runs: a test whose pools' daemon died
// under it fails for that, whatever else it reports.
func watch(t testing.TB) {
	if _, dup := watched.LoadOrStore(t, struct{}{}); dup {
		return
	}
	if err := ensureDaemon(); err != nil {
		t.Fatalf("zfsenv: ZFS is not usable: %v", err)
	}
	pid := DaemonPid()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	reported := false // written by the goroutine, read after done
	go func() {
		defer close(done)
		reported = probeLoop(ctx, t, pid)
	}()
	// Registered before the pools' cleanups, so it runs after them: a
	// cleanup that hangs on a deadlocked daemon is still rescued.
	t.Cleanup(func() {
		stop()
		<-done
		if !reported {
			checkSame(t, pid)
		}
		watched.Delete(t)
	})
}

// probeLoop probes every probeEvery until ctx ends, restarts a daemon
// that died or stopped answering, and says whether it did.
func probeLoop(ctx context.Context, t testing.TB, pid int) bool {
	missed := 0
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
		if now := DaemonPid(); now >= 0 && now != pid {
			return checkSame(t, pid)
		}
		err := probe(ctx)
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			missed = 0
			continue
		}
		if missed++; missed < deadAfter {
			continue
		}
		restartDaemon(pid)
		fmt.Fprintln(os.Stderr, RestartMarker)
		t.Errorf("%s: zpool or the daemon's FUSE mount did not answer for %s; the daemon was killed and started again (the ZFS stand-in failed, not necessarily the code under test)",
			RestartMarker, time.Duration(deadAfter)*(probeEvery+probeTimeout))
		return true
	}
}

// checkSame fails t if zfs-fuse is no longer the process pid (it died, and
// maybe another test binary started it again), starting it again if
// none runs, and says whether it did.
func checkSame(t testing.TB, pid int) bool {
	now := DaemonPid()
	if now < 0 || now == pid {
		return false // the same, or no telling now: the probes still judge
	}
	tail := daemonLogTail()
	if now == 0 {
		_ = ensureDaemon()
	}
	fmt.Fprintln(os.Stderr, RestartMarker)
	t.Errorf("%s: zfs-fuse (pid %d) died during the test, taking its pools along (the ZFS stand-in failed, not necessarily the code under test); the end of %s:\n%s",
		RestartMarker, pid, DaemonLog, tail)
	return true
}

// restartDaemon kills zfs-fuse, detaches the mounts it served, forgets
// the pools (clearDead) and starts it again. What its threads waited in
// goes to DaemonLog first: the deadlock is zfs-fuse's, and where it
// stands is the one clue to it (those seen here: about 500 threads on
// user-space locks, none in a pipe or in I/O).
//
// It kills the daemon the test began with by its pid, and another it
// finds, never waiting on a scan of /proc that could block
// (procTimeout); knowing neither, a pkill it gives up on after as long.
func restartDaemon(pid int) {
	now := DaemonPid()
	if now > 0 && now != pid {
		_ = syscall.Kill(now, syscall.SIGKILL)
	}
	// The pid the test began with may be gone (another test's watchdog
	// killed it) and taken by another process since: it is killed only
	// if it is still a zfs-fuse.
	if pid > 0 && within(procTimeout, func() bool { return isDaemon(pid) }, true) {
		logDaemon(fmt.Sprintf("zfsenv: zfs-fuse (pid %d) did not answer; its threads wait in: %s", pid, waits(pid)))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if now <= 0 && pid <= 0 {
		_ = runWithin(context.Background(), procTimeout, []string{"pkill", "-9", "-x", "zfs-fuse"})
	}
	waitGone()
	_ = ensureDaemon()
}

// kstatMount is a FUSE mount zfs-fuse serves from start to stop.
const kstatMount = "/zfs-kstat"

// probe asks the daemon both ways work reaches it: a zpool command, and a
// stat through its FUSE mount. zfs-fuse has been seen hung on its FUSE
// side alone (zfs create and every file access stuck, zpool list still
// answering), which a zpool probe misses. Each must finish within
// probeTimeout; a command stuck in the kernel is left behind rather than
// waited for, so the probe itself never hangs.
func probe(ctx context.Context) error {
	probes := [][]string{{"zpool", "list", "-H", "-o", "name"}}
	if mounted(kstatMount) {
		probes = append(probes, []string{"stat", "-f", kstatMount})
	}
	for _, args := range probes {
		if err := runWithin(ctx, probeTimeout, args); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
		}
	}
	return nil
}

// runWithin runs args and waits at most d for it to exit.
func runWithin(ctx context.Context, d time.Duration, args []string) error {
	cmd := exec.Command(args[0], args[1:]...)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	case <-t.C:
	}
	_ = cmd.Process.Kill() // may stay in the kernel; its Wait goroutine ends when it does
	return fmt.Errorf("no answer within %s", d)
}

// mounted reports whether path is a mount point now.
func mounted(path string) bool { return mountPoints()[path] }

// mountPoints are the paths mounted now.
func mountPoints() map[string]bool {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return nil
	}
	m := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			m[f[1]] = true
		}
	}
	return m
}
