package zfsenv

import (
	"strings"
	"syscall"
	"testing"
)

// A benchmark's StopDaemon stops the zfs-fuse it started once no pool is
// imported, refuses while one is, and never stops one it did not start.
// It stops the shared daemon, so make test runs it alone
// (test/tools/zfs-tests.sh).
func TestStopDaemonStopsItsOwnOnceNoPoolIsLeft(t *testing.T) {
	Require(t)
	if !noPools() {
		t.Fatal("pools are imported that no sweep removed; this test needs zfs-fuse to itself")
	}
	// This process's own daemon, whoever started the running one.
	if pid := DaemonPid(); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		waitGone()
	}
	if err := ensureDaemon(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ensureDaemon() }) // for the tests after this one

	pool, err := createPool("stop", 64, false)
	if err != nil {
		t.Fatal(err)
	}
	err = StopDaemon()
	if err == nil || !strings.Contains(err.Error(), "pools imported") {
		t.Errorf("StopDaemon with a pool imported = %v, want it refused", err)
	}
	if DaemonPid() <= 0 {
		t.Fatal("StopDaemon stopped zfs-fuse under a pool")
	}
	if err := DestroyPool(pool); err != nil {
		t.Fatal(err)
	}

	startedMu.Lock()
	own := startedPid
	startedPid = 0 // as if another process had started it
	startedMu.Unlock()
	if err := StopDaemon(); err != nil || DaemonPid() != own {
		t.Fatalf("StopDaemon of a daemon this process did not start = %v, daemon %d (want nil, %d still running)", err, DaemonPid(), own)
	}
	startedMu.Lock()
	startedPid = own
	startedMu.Unlock()

	if err := StopDaemon(); err != nil {
		t.Fatal(err)
	}
	if pid := DaemonPid(); pid != 0 {
		t.Fatalf("zfs-fuse still runs (pid %d) after StopDaemon", pid)
	}
}
