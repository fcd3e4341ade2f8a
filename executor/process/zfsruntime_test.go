package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/executor/process"
	"github.com/drovehq/drove/executor/zfs"
)

// The ZFS runtime runs an instance's process with its dataset's
// mountpoint as its working directory and $DROVE_DATA, and starts and
// stops idempotently.
func TestZFSRuntimeRunsTheProcessOnItsData(t *testing.T) {
	ctx := context.Background()
	d := newNode(t, "n1", func(string) ([]string, error) {
		return []string{"sh", "-c", `pwd > "$DROVE_DATA/cwd"; while :; do date +%s%N >> log; sleep 0.01; done`}, nil
	})
	rt := process.ZFSRuntime{Driver: d}
	in := zfs.Instance{Name: "web-1", Node: "n1", Dataset: "tank/drove/web-1", Mountpoint: t.TempDir()}
	if run, err := rt.Running(ctx, in); err != nil || run {
		t.Fatalf("before Start: running %v, %v", run, err)
	}
	for i := 0; i < 2; i++ { // the second Start leaves the running process alone
		if err := rt.Start(ctx, in); err != nil {
			t.Fatalf("Start %d: %v", i+1, err)
		}
	}
	st, _ := d.Status(ctx, in.Name)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(in.Mountpoint, "log"))
		if strings.Count(string(b), "\n") >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the process wrote %q in 10 s", b)
		}
		time.Sleep(10 * time.Millisecond) // polling the file the process writes, with a deadline
	}
	if err := rt.Stop(ctx, in); err != nil {
		t.Fatal(err)
	}
	if run, _ := rt.Running(ctx, in); run {
		t.Fatalf("running after Stop (pid %d)", st.Pid)
	}
	b, err := os.ReadFile(filepath.Join(in.Mountpoint, "cwd"))
	if want, _ := filepath.EvalSymlinks(in.Mountpoint); err != nil || strings.TrimSpace(string(b)) != want {
		t.Fatalf("the process ran in %q (%v), want %q", b, err, want)
	}
	if err := rt.Stop(ctx, in); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
}

// Stop returns only once every process of the instance has ended, not
// only the first: the child here outlives the shell it was started by
// (which dies at once on SIGTERM) and writes for half a second more, as a
// workload's dd may still be writing when its shell is gone. What it
// wrote is there when Stop returns, as the storage driver's next snapshot
// expects.
func TestStopWaitsForEveryProcessOfTheInstance(t *testing.T) {
	ctx := context.Background()
	// A stop timeout no loaded machine reaches: the child ends by itself.
	d, err := process.New(process.Config{Node: "n1", Dir: t.TempDir(), StopTimeout: time.Minute,
		Command: func(string) ([]string, error) {
			child := `trap 'sleep 0.5; echo late > late; exit 0' TERM; echo up > up; while :; do sleep 0.05; done`
			return []string{"sh", "-c", `sh -c "$0" & wait`, child}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Destroy)
	rt := process.ZFSRuntime{Driver: d}
	in := zfs.Instance{Name: "web-1", Node: "n1", Dataset: "tank/drove/web-1", Mountpoint: t.TempDir()}
	if err := rt.Start(ctx, in); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(filepath.Join(in.Mountpoint, "up")); err != nil; _, err = os.Stat(filepath.Join(in.Mountpoint, "up")) {
		if time.Now().After(deadline) {
			t.Fatal("the child did not start in 10 s")
		}
		time.Sleep(10 * time.Millisecond) // polling the file the child writes, with a deadline
	}
	if err := rt.Stop(ctx, in); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(in.Mountpoint, "late")); err != nil || string(b) != "late\n" {
		t.Fatalf("when Stop returned the child had not finished its last write: %q, %v", b, err)
	}
}
