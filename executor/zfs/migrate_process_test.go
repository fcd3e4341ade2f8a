package zfs_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor/process"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/test/zfsenv"
)

// nodeWith is node with any runtime.
func (w *world) nodeWith(name, pool string, rt zfs.Runtime) *node {
	w.t.Helper()
	d, err := zfs.New(w.ctx, zfs.Config{Node: name, Parent: pool, Runtime: rt, ReportInterval: 50 * time.Millisecond, Logger: testLogger()})
	if err != nil {
		w.t.Fatalf("zfs.New: %v", err)
	}
	n := &node{name: name, pool: pool, driver: d}
	n.start(w)
	return n
}

// workload is the instance's process: it numbers the lines it appends to
// log in its dataset, with its node's name, and writes noise besides.
func workload(string) ([]string, error) {
	return []string{"sh", "-c", `i=0; while :; do i=$((i+1)); echo "$DROVE_NODE $i" >> log; head -c 65536 /dev/urandom >> noise; sleep 0.02; done`}, nil
}

// TestMigrationWithProcessRuntime migrates a zfs-local instance run by
// the process runtime, its process writing all along: after the switch
// the process runs on the target only, over a log whose lines from the
// source are all there, in order, and it goes on writing there;
// finalize drops the source copy.
func TestMigrationWithProcessRuntime(t *testing.T) {
	poolA, poolB := zfsenv.Pool(t, "a", 256), zfsenv.Pool(t, "b", 256)
	w := newWorld(t, []string{"na", "nb"}, instance("vm6", events.StorageZFSLocal, "na", ""))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm6")
	fill(t, "/"+poolA+"/vm6", 32<<20)
	procs := map[string]*process.Driver{}
	for _, n := range []string{"na", "nb"} {
		p, err := process.New(process.Config{Node: n, Dir: t.TempDir(), Command: workload, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Destroy)
		procs[n] = p
	}
	rtA, rtB := process.ZFSRuntime{Driver: procs["na"]}, process.ZFSRuntime{Driver: procs["nb"]}
	if err := rtA.Start(w.ctx, zfs.Instance{Name: "vm6", Node: "na", Dataset: poolA + "/vm6", Mountpoint: "/" + poolA + "/vm6"}); err != nil {
		t.Fatal(err)
	}
	w.nodeWith("na", poolA, rtA)
	w.nodeWith("nb", poolB, rtB)

	m := w.migration("m6", "vm6", "na", "nb")
	m.must(events.PhaseBegin)
	s1, s2 := m.must(events.PhaseSync), m.must(events.PhaseSync)
	sw := m.must(events.PhaseSwitch)
	t.Logf("process runtime: sync 1 %d bytes, sync 2 %d bytes, switch %d bytes, downtime %d ms", s1.Bytes, s2.Bytes, sw.Bytes, sw.DowntimeMS)
	w.placed("vm6", "nb", "na", "m6")
	if a, _ := procs["na"].Status(w.ctx, "vm6"); a.Running {
		t.Fatal("the process still runs on the source")
	}
	if b, _ := procs["nb"].Status(w.ctx, "vm6"); !b.Running {
		t.Fatal("the process does not run on the target")
	}
	log := "/" + poolB + "/vm6/log"
	for !strings.Contains(readString(t, log), "nb 5\n") {
		select {
		case <-w.ctx.Done():
			t.Fatal("the process does not write on the target")
		case <-time.After(50 * time.Millisecond): // polling the workload with a deadline
		}
	}
	next := 1
	for _, line := range strings.Split(readString(t, log), "\n") {
		if strings.HasPrefix(line, "na ") {
			if line != fmt.Sprintf("na %d", next) {
				t.Fatalf("the source's line %d is %q on the target", next, line)
			}
			next++
		}
	}
	if next < 10 {
		t.Fatalf("only %d lines from the source on the target", next-1)
	}
	m.must("finalize")
	if left := append(datasets(t, poolA, "vm6"), datasets(t, poolB, "vm6@")...); len(left) > 0 {
		t.Fatalf("left after finalize: %v", left)
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
