package qemu_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/qemu"
	"github.com/drovehq/drove/executor/zfs"
)

const memMiB = 64

// node is one side of a move: a driver and the directory standing for its
// dataset, where the instance's disk lives.
type node struct {
	name string
	d    *qemu.Driver
	data string
}

func newNode(t *testing.T, name string, mod func(*qemu.Config)) *node {
	t.Helper()
	dir, err := os.MkdirTemp("", "dq") // short: QMP socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	n := &node{name: name, data: filepath.Join(dir, "data")}
	if err := os.MkdirAll(n.data, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := qemu.Config{
		Node: name, Dir: filepath.Join(dir, "run"),
		Disk:         func(inst string) (string, error) { return filepath.Join(n.data, inst+".raw"), nil },
		PollInterval: 50 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	d, err := qemu.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.d = d
	t.Cleanup(func() {
		d.Destroy()
		if t.Failed() { // QEMU's own words help most
			logs, _ := filepath.Glob(filepath.Join(cfg.Dir, "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s %s:\n%s", name, filepath.Base(l), b)
			}
		}
	})
	return n
}

// disk writes the instance's disk on n, as the storage driver would have.
func (n *node) disk(t *testing.T, inst string, w qemu.Workload) {
	t.Helper()
	if err := qemu.WriteGuestDisk(filepath.Join(n.data, inst+".raw"), 1, memMiB, w); err != nil {
		t.Fatal(err)
	}
}

func (n *node) state(t *testing.T, inst string) qemu.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := n.d.Status(ctx, inst)
	if err != nil {
		t.Fatalf("status of %s on %s: %v", inst, n.name, err)
	}
	return st
}

func migrateOp(inst string, from, to *node) executor.Op {
	return executor.Op{Request: "r-" + inst, Kind: events.OpInstanceMigrate, Mode: events.ModeMigrateLive,
		Instance: inst, Size: events.Size{MemoryMiB: memMiB, VCPUs: 1, DisksMiB: []int64{1}},
		Storage: events.StorageRBD, RunState: events.RunRunning, From: from.name, To: to.name,
		Primary: from.name, Attempt: 1}
}

// recorder keeps every report and status of a move.
type recorder struct {
	mu       sync.Mutex
	reports  []executor.Progress
	statuses map[string][]events.NodeMoveStatus
}

func (r *recorder) report(p executor.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, p)
}

func (r *recorder) status(node string, s events.NodeMoveStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.statuses == nil {
		r.statuses = map[string][]events.NodeMoveStatus{}
	}
	r.statuses[node] = append(r.statuses[node], s)
}

func (r *recorder) snapshot() []executor.Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]executor.Progress(nil), r.reports...)
}

// move wires a source Run and a target Receive as two executors would:
// the target announces its address, the source awaits it.
type move struct {
	rec      recorder
	recvErr  chan error
	listened chan string
}

func startMove(t *testing.T, ctx context.Context, op *executor.Op, from, to *node) *move {
	t.Helper()
	m := &move{recvErr: make(chan error, 1), listened: make(chan string, 1)}
	addr := make(chan string, 1)
	op.AwaitReceiver = func(ctx context.Context) (string, error) {
		select {
		case a := <-addr:
			return a, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	op.Status = m.rec.status
	go func() {
		m.recvErr <- to.d.Receive(ctx, *op, func(a string) { addr <- a; m.listened <- a }, func(executor.Progress) {})
	}()
	return m
}

func (m *move) receiveResult(t *testing.T) error {
	t.Helper()
	select {
	case err := <-m.recvErr:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the target's Receive did not return")
		return nil
	}
}

// run runs op on its source and waits for the target's side; either
// failing fails the test.
func (m *move) run(t *testing.T, ctx context.Context, op executor.Op, from *node) executor.Result {
	t.Helper()
	res, err := from.d.Run(ctx, op, m.rec.report)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := m.receiveResult(t); err != nil {
		t.Fatalf("Receive: %v", err)
	}
	t.Logf("result: %+v", res)
	return res
}

func start(t *testing.T, n *node, inst string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.d.Start(ctx, inst, events.Size{MemoryMiB: memMiB, VCPUs: 1}); err != nil {
		t.Fatal(err)
	}
	if st := n.state(t, inst); st.Status != events.StatusUp {
		t.Fatalf("after start: %+v", st)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// guestWrote waits until the guest has written the last page of its
// region at least once: its memory is then real, not zero pages.
func guestWrote(t *testing.T, n *node, inst string) {
	t.Helper()
	cmd := fmt.Sprintf("xp /1wx 0x%x", (memMiB-8)<<20-4096)
	waitFor(t, "the guest to fill its memory", 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		out, err := n.d.HMP(ctx, inst, cmd)
		return err == nil && !strings.HasSuffix(strings.TrimSpace(out), "0x00000000")
	})
}

func gone(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) != nil }

func TestLiveMigrationMovesTheRunningVM(t *testing.T) {
	a, b := newNode(t, "qa", nil), newNode(t, "qb", nil)
	const inst = "vm1"
	a.disk(t, inst, qemu.FillOnce)
	b.disk(t, inst, qemu.FillOnce) // the storage driver's copy on the target
	start(t, a, inst)
	srcPid := a.state(t, inst).Pid
	guestWrote(t, a, inst) // real RAM to move

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	op := migrateOp(inst, a, b)
	m := startMove(t, ctx, &op, a, b)
	res := m.run(t, ctx, op, a)
	if res.Downtime <= 0 {
		t.Errorf("downtime %v, want > 0", res.Downtime)
	}
	if res.Bytes < 40<<20 {
		t.Errorf("sent %d bytes, want the guest's filled memory (> 40 MiB)", res.Bytes)
	}
	if st := b.state(t, inst); st.Status != events.StatusUp || st.RunState != "running" {
		t.Errorf("target after the move: %+v, want up and running", st)
	}
	if st := a.state(t, inst); st.Status != events.StatusDown || st.Running {
		t.Errorf("source after the move: %+v, want down", st)
	}
	waitFor(t, "the source QEMU to exit", 5*time.Second, func() bool { return gone(srcPid) })

	reps := m.rec.snapshot()
	var last int64
	sawRate := false
	for _, p := range reps {
		if p.Current < last {
			t.Fatalf("progress went back: %d after %d", p.Current, last)
		}
		last = p.Current
		sawRate = sawRate || p.BytesPerSecond > 0
	}
	fin := reps[len(reps)-1]
	if fin.Current != fin.Total || fin.Current == 0 {
		t.Errorf("final progress %d/%d, want equal and non-zero", fin.Current, fin.Total)
	}
	if !sawRate {
		t.Error("no progress report carried a rate")
	}

	// Run again, as after a crash: the instance already moved.
	if res2, err := a.d.Run(ctx, op, func(executor.Progress) {}); err != nil {
		t.Errorf("second Run: %v", err)
	} else {
		t.Logf("second Run: %s", res2.Message)
	}
}

func TestPreCopyFailureKeepsTheSourceUp(t *testing.T) {
	a := newNode(t, "qa", func(c *qemu.Config) { c.MaxBandwidth = 8 << 20 })
	b := newNode(t, "qb", nil)
	const inst = "vm2"
	a.disk(t, inst, qemu.FillForever)
	b.disk(t, inst, qemu.FillForever)
	start(t, a, inst)
	srcPid := a.state(t, inst).Pid
	guestWrote(t, a, inst)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	op := migrateOp(inst, a, b)
	m := startMove(t, ctx, &op, a, b)
	runErr := make(chan error, 1)
	go func() {
		_, err := a.d.Run(ctx, op, m.rec.report)
		runErr <- err
	}()
	// Kill the target's QEMU once real memory is on the wire.
	<-m.listened
	waitFor(t, "pre-copy to send 2 MiB", 20*time.Second, func() bool {
		for _, p := range m.rec.snapshot() {
			if p.Current > 2<<20 {
				return true
			}
		}
		return false
	})
	tgt := b.state(t, inst)
	if tgt.Status != events.StatusMigrationDestination {
		t.Fatalf("target during the move: %+v", tgt)
	}
	syscall.Kill(tgt.Pid, syscall.SIGKILL)

	var err error
	select {
	case err = <-runErr:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after the target died")
	}
	if err == nil || !errors.Is(err, executor.ErrFatal) || !errors.Is(err, qemu.ErrMigrationFailed) {
		t.Fatalf("Run: %v, want a fatal ErrMigrationFailed", err)
	}
	if rerr := m.receiveResult(t); rerr == nil {
		t.Error("Receive succeeded on a killed target")
	}
	if st := a.state(t, inst); st.Status != events.StatusUp || st.RunState != "running" || st.Pid != srcPid {
		t.Errorf("source after the failure: %+v, want the same VM up and running", st)
	}
	if st := b.state(t, inst); st.Status != events.StatusDown || st.Running {
		t.Errorf("target after the failure: %+v, want gone", st)
	}
}

func TestCancelInPreCopyKeepsTheSourceUp(t *testing.T) {
	// An impossible downtime limit and a low cap keep pre-copy going.
	a := newNode(t, "qa", func(c *qemu.Config) { c.MaxBandwidth = 4 << 20; c.DowntimeLimit = time.Millisecond })
	b := newNode(t, "qb", nil)
	const inst = "vm3"
	a.disk(t, inst, qemu.FillForever)
	b.disk(t, inst, qemu.FillForever)
	start(t, a, inst)
	guestWrote(t, a, inst)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	op := migrateOp(inst, a, b)
	rctx, rcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer rcancel()
	m := startMove(t, rctx, &op, a, b)
	runErr := make(chan error, 1)
	go func() {
		_, err := a.d.Run(ctx, op, m.rec.report)
		runErr <- err
	}()
	<-m.listened
	waitFor(t, "pre-copy to send 1 MiB", 20*time.Second, func() bool {
		r := m.rec.snapshot()
		return len(r) > 0 && r[len(r)-1].Current > 1<<20
	})
	cancel()
	var err error
	select {
	case err = <-runErr:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if !errors.Is(err, executor.ErrCanceled) {
		t.Fatalf("Run: %v, want ErrCanceled", err)
	}
	if rerr := m.receiveResult(t); rerr == nil {
		t.Error("Receive succeeded after the source cancelled")
	}
	if st := a.state(t, inst); st.Status != events.StatusUp {
		t.Errorf("source after cancel: %+v, want up", st)
	}
	if st := b.state(t, inst); st.Running {
		t.Errorf("target after cancel: %+v, want gone", st)
	}
}

func TestPostCopyFinishesANonConvergingMigration(t *testing.T) {
	// 64 MiB at 16 s per GiB: the switch comes after one second of a
	// pre-copy capped far below the guest's dirty rate.
	mod := func(c *qemu.Config) {
		c.AllowPostCopy = true
		c.CompletionTimeoutPerGiB = 16 * time.Second
		c.MaxBandwidth = 2 << 20
	}
	a, b := newNode(t, "qa", mod), newNode(t, "qb", mod)
	const inst = "vm4"
	a.disk(t, inst, qemu.FillForever)
	b.disk(t, inst, qemu.FillForever)
	start(t, a, inst)
	guestWrote(t, a, inst)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	op := migrateOp(inst, a, b)
	m := startMove(t, ctx, &op, a, b)
	go func() {
		// Cancel once post-copy began: the move must finish regardless.
		waitFor(t, "the switch to post-copy", 30*time.Second, func() bool {
			m.rec.mu.Lock()
			defer m.rec.mu.Unlock()
			return len(m.rec.statuses[a.name]) > 0
		})
		cancel()
	}()
	res := m.run(t, ctx, op, a)
	if got := m.rec.statuses[a.name]; len(got) != 1 || got[0] != events.StatusPaused {
		t.Errorf("source statuses mid-move %v, want [paused]", got)
	}
	for _, want := range []string{"post-copy", "point of no return"} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("result %q does not say %q", res.Message, want)
		}
	}
	if st := b.state(t, inst); st.Status != events.StatusUp {
		t.Errorf("target: %+v, want up", st)
	}
	if st := a.state(t, inst); st.Running {
		t.Errorf("source: %+v, want down", st)
	}
}

func TestFailoverStopsTheVMAndBootsItOnTheTarget(t *testing.T) {
	a, b := newNode(t, "qa", nil), newNode(t, "qb", nil)
	const inst = "vm5"
	a.disk(t, inst, qemu.FillOnce)
	b.disk(t, inst, qemu.FillOnce)
	start(t, a, inst)
	srcPid := a.state(t, inst).Pid

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	op := migrateOp(inst, a, b)
	op.Kind = events.OpInstanceFailover
	m := startMove(t, ctx, &op, a, b)
	m.run(t, ctx, op, a)
	if !gone(srcPid) {
		t.Error("the source QEMU still runs")
	}
	if st := b.state(t, inst); st.Status != events.StatusUp {
		t.Errorf("target: %+v, want up", st)
	}
	guestWrote(t, b, inst) // booted afresh from its disk on the target
}

func TestStartStopStatusAndReattach(t *testing.T) {
	dir, err := os.MkdirTemp("", "dq")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	disk := filepath.Join(dir, "vm6.raw")
	if err := qemu.WriteGuestDisk(disk, 1, memMiB, qemu.FillOnce); err != nil {
		t.Fatal(err)
	}
	cfg := qemu.Config{Node: "qa", Dir: filepath.Join(dir, "run"),
		Disk: func(string) (string, error) { return disk, nil }}
	d1, err := qemu.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d1.Destroy()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if st, _ := d1.Status(ctx, "vm6"); st.Status != events.StatusDown || st.Running {
		t.Fatalf("before start: %+v", st)
	}
	if err := d1.Start(ctx, "vm6", events.Size{MemoryMiB: memMiB}); err != nil {
		t.Fatal(err)
	}
	if err := d1.Start(ctx, "vm6", events.Size{MemoryMiB: memMiB}); !errors.Is(err, qemu.ErrAlreadyRunning) {
		t.Errorf("second start: %v, want ErrAlreadyRunning", err)
	}
	st1, _ := d1.Status(ctx, "vm6")

	// A restarted executor's driver finds the VM again.
	d1.Close()
	d2, err := qemu.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Destroy()
	st2, err := d2.Status(ctx, "vm6")
	if err != nil || st2.Pid != st1.Pid || st2.Status != events.StatusUp {
		t.Fatalf("after reattach: %+v %v, want pid %d up", st2, err, st1.Pid)
	}
	if got := d2.Instances(); len(got) != 1 || got[0] != "vm6" {
		t.Errorf("instances %v", got)
	}
	if err := d2.Stop(ctx, "vm6"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the VM to exit", 10*time.Second, func() bool { return gone(st1.Pid) })
	if st, _ := d2.Status(ctx, "vm6"); st.Status != events.StatusDown {
		t.Errorf("after stop: %+v", st)
	}
}

func TestConfigValidateListsEveryProblem(t *testing.T) {
	err := qemu.Config{Binary: "no-such-qemu", DowntimeLimit: -1}.Validate()
	if !errors.Is(err, qemu.ErrInvalidConfig) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"node", "dir", "no-such-qemu", "downtime limit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %q", err, want)
		}
	}
}

func TestZFSRuntimeBootsFromTheMountedDataset(t *testing.T) {
	n := newNode(t, "qz", nil)
	mnt := t.TempDir() // stands for the dataset's mountpoint
	if err := qemu.WriteGuestDisk(filepath.Join(mnt, "disk.raw"), 1, memMiB, qemu.FillOnce); err != nil {
		t.Fatal(err)
	}
	rt := qemu.ZFSRuntime{Driver: n.d, Size: func(string) events.Size { return events.Size{MemoryMiB: memMiB} }}
	in := zfs.Instance{Name: "vm8", Node: "qz", Dataset: "pool/vm8", Mountpoint: mnt}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 2 { // idempotent
		if err := rt.Start(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if run, err := rt.Running(ctx, in); !run || err != nil {
		t.Fatalf("running %v %v", run, err)
	}
	guestWrote(t, n, "vm8") // it booted the dataset's disk
	if err := rt.Stop(ctx, in); err != nil {
		t.Fatal(err)
	}
	if run, _ := rt.Running(ctx, in); run {
		t.Error("still running after Stop")
	}
}

// log is the QEMU log of inst on n.
func (n *node) log(t *testing.T, inst string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(n.data), "run", inst+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
