package allinone_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/executor/zfs"
)

// The demo's workload starts again, and writes, over whatever a stop at
// any moment left in its directory, as the start on a move's target does
// over what the source's stop left: its place in the ring is read back
// even when a stop cut the rewrite of "pos" (which left it empty, and
// the next start died at its first write). The workload runs under the
// process runtime as in the demo, on a plain directory (no ZFS needed),
// stopped at varied moments after it has written, again and again.
func TestWorkloadRestartsAfterAnyStop(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	demo := &allinone.ZFSDemo{Pools: map[string]string{"n1": "unused"}, StateDir: state,
		Workload: allinone.Workload{Block: 512, Blocks: 8, Interval: time.Millisecond}}
	rt, err := demo.Runtime("n1")
	if err != nil {
		t.Fatal(err)
	}
	in := zfs.Instance{Name: "w", Node: "n1", Dataset: "unused/drove/w", Mountpoint: dir}
	ctx := context.Background()
	t.Cleanup(func() { _ = rt.Stop(ctx, in) })
	logf := filepath.Join(state, "n1", "_w.log") // the process runtime's
	for _, bad := range []string{"", "x", "09", "300"} {
		// What a cut or foreign write may leave: each counts as 0.
		if err := os.WriteFile(filepath.Join(dir, "pos"), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		restartWrites(t, rt, in, logf, fmt.Sprintf("pos %q", bad), 0)
	}
	for i := range 60 {
		restartWrites(t, rt, in, logf, fmt.Sprintf("restart %d", i), time.Duration(i%7)*time.Millisecond)
	}
}

// restartWrites starts in, waits until it has rewritten "pos" (or died:
// the test fails with its log), and stops it after lag more.
func restartWrites(t *testing.T, rt zfs.Runtime, in zfs.Instance, logf, what string, lag time.Duration) {
	t.Helper()
	ctx := context.Background()
	pos := filepath.Join(in.Mountpoint, "pos")
	before, _ := os.ReadFile(pos)
	if err := rt.Start(ctx, in); err != nil {
		t.Fatalf("%s: start (pos was %q): %v", what, before, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if now, _ := os.ReadFile(pos); len(now) > 0 && string(now) != string(before) {
			break
		}
		if run, err := rt.Running(ctx, in); err != nil || !run {
			log, _ := os.ReadFile(logf)
			t.Fatalf("%s: the workload died after its start (pos was %q; its log: %q)", what, before, log)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the workload did not rewrite pos within 30s", what)
		}
		time.Sleep(2 * time.Millisecond) // polling the file the workload writes
	}
	// Not to synchronise: the stop comes at another moment of the
	// workload's loop each time.
	time.Sleep(lag)
	if err := rt.Stop(ctx, in); err != nil {
		t.Fatalf("%s: stop: %v", what, err)
	}
}
