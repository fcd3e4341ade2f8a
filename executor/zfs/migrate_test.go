package zfs_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/test/testenv"
	"github.com/drovehq/drove/test/zfsenv"
)

// migration drives one per-instance migration through the executors, as
// the planner service's coordinator does: MigrationPhaseDispatched to the
// source, one phase at a time, each a higher seq.
type migration struct {
	w                  *world
	id, instance       string
	from, to           string
	seq, syncs         int
	mbps               float64
	dispatchedAt       map[int]time.Time
	dispatchedAtLocker sync.Mutex
}

func (w *world) migration(id, instance, from, to string) *migration {
	return &migration{w: w, id: id, instance: instance, from: from, to: to, dispatchedAt: map[int]time.Time{}}
}

// dispatch sends the next phase and returns its seq.
func (m *migration) dispatch(phase string) int {
	m.w.t.Helper()
	m.seq++
	d := events.MigrationPhaseDispatched{Migration: m.id, Instance: m.instance, Node: m.from, Seq: m.seq,
		Phase: phase, Source: m.from, Target: m.to, SendMbps: m.mbps,
		Facts: testenv.Facts(m.w.t, m.w.ctx, m.w.kcfg, m.instance, m.from, m.to)} // as the coordinator would
	if phase == events.PhaseSync {
		m.syncs++
		d.Sync = m.syncs
	}
	m.dispatchedAtLocker.Lock()
	m.dispatchedAt[m.seq] = time.Now()
	m.dispatchedAtLocker.Unlock()
	m.w.append(events.TopicOpcodes, m.w.event(d))
	return m.seq
}

// ended waits for the end of phase seq.
func (m *migration) ended(seq int) events.MigrationPhaseEnded {
	m.w.t.Helper()
	ofPhase := func(e events.MigrationPhaseEnded) bool { return e.Migration == m.id && e.Seq == seq }
	for {
		if ended := testenv.Read(m.w.t, m.w.ctx, m.w.kcfg, ofPhase); len(ended) > 0 {
			return ended[0]
		}
		select {
		case <-m.w.ctx.Done():
			m.w.t.Fatalf("phase %d of %s did not end in time", seq, m.id)
		case <-time.After(50 * time.Millisecond): // polling the log with a deadline
		}
	}
}

// must runs the next phase, which must succeed.
func (m *migration) must(phase string) events.MigrationPhaseEnded {
	m.w.t.Helper()
	e := m.ended(m.dispatch(phase))
	if e.Status != events.JobSuccess {
		m.w.t.Fatalf("%s (seq %d) of %s ended %s: %s", phase, e.Seq, m.id, e.Status, e.Error)
	}
	return e
}

// sending waits until phase seq reported at least n bytes sent.
func (m *migration) sending(seq int, n int64) {
	m.w.t.Helper()
	for {
		for _, p := range m.w.progress(m.from) {
			if p.Request == m.id && p.Index == seq && p.Current >= n {
				return
			}
		}
		select {
		case <-m.w.ctx.Done():
			m.w.t.Fatalf("phase %d of %s never sent %d bytes", seq, m.id, n)
		case <-time.After(20 * time.Millisecond): // polling the log with a deadline
		}
	}
}

// endMessage is the message of phase seq's End event.
func (m *migration) endMessage(seq int) string {
	m.w.t.Helper()
	ofPhase := func(e events.End) bool { return e.Request == m.id && e.Index == seq }
	if ends := testenv.Read(m.w.t, m.w.ctx, m.w.kcfg, ofPhase); len(ends) > 0 {
		return ends[0].Message
	}
	return ""
}

// placed records instance's move from → to in the inventory.
func (w *world) placed(instance, to, from, request string) {
	w.t.Helper()
	w.append(events.TopicInventory, w.event(events.InstancePlaced{Instance: instance, Group: "g1", PrimaryNode: to,
		PreviousGroup: "g1", PreviousPrimary: from, Request: request}))
}

// datasets lists pool's datasets and snapshots of instance.
func datasets(t *testing.T, pool, instance string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Fields(zfsenv.Run(t, "zfs", "list", "-H", "-t", "all", "-o", "name", "-r", pool)) {
		if strings.Contains(l, "/"+instance) {
			out = append(out, l)
		}
	}
	return out
}

// TestMigrationSwitchThenRollback is the on-demand migration of a
// zfs-local instance through two executors on Kafka, its workload
// writing: begin, sync, sync (smaller), switch with a measured downtime
// and equal content; the instance writes on the target, and a rollback
// brings it back with those writes; no copy or snapshot is left.
func TestMigrationSwitchThenRollback(t *testing.T) {
	const size = 96 << 20
	poolA, poolB := zfsenv.Pool(t, "a", 512), zfsenv.Pool(t, "b", 512)
	w := newWorld(t, []string{"na", "nb"}, instance("vm1", events.StorageZFSLocal, "na", ""))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm1")
	src := "/" + poolA + "/vm1"
	fill(t, src, size)
	wr := startWriter(src, 4<<20)
	defer wr.stop()

	var mu sync.Mutex
	var wrB *writer // the workload on the target, once started there
	rtA, rtB := zfs.NewMemRuntime("vm1"), zfs.NewMemRuntime()
	rtA.OnStop = func(zfs.Instance) { wr.stop() }
	rtB.OnStart = func(in zfs.Instance) { mu.Lock(); wrB = startWriterTo(in.Mountpoint, "log-b", 4<<20); mu.Unlock() }
	rtB.OnStop = func(zfs.Instance) { mu.Lock(); wrB.stop(); mu.Unlock() }
	a := w.node("na", poolA, rtA, nil)
	w.node("nb", poolB, rtB, nil)

	m := w.migration("m1", "vm1", "na", "nb")
	m.must(events.PhaseBegin)
	s1, s2 := m.must(events.PhaseSync), m.must(events.PhaseSync)
	sw := m.must(events.PhaseSwitch)
	t.Logf("switch: %s", m.endMessage(sw.Seq))
	rep := a.driver.Reports()[len(a.driver.Reports())-1]
	t.Logf("sync 1: %d bytes; sync 2: %d bytes; switch: %d bytes, final delta %d bytes, downtime %d ms (checksum ahead %s, at the switch %s: %d bytes read, %d reused)",
		s1.Bytes, s2.Bytes, sw.Bytes, rep.FinalDelta, sw.DowntimeMS, rep.AheadTime, rep.ChecksumTime, rep.ChecksumRead, rep.ChecksumReused)
	if s1.Bytes < size || s2.Bytes <= 0 || s2.Bytes >= s1.Bytes || rep.FinalDelta >= s1.Bytes || sw.DowntimeMS <= 0 {
		t.Errorf("syncs %d then %d bytes, final delta %d, downtime %d ms: want a full send, smaller incrementals, a measured downtime",
			s1.Bytes, s2.Bytes, rep.FinalDelta, sw.DowntimeMS)
	}
	w.placed("vm1", "nb", "na", "m1") // as the coordinator does on the switch's end
	if !rtB.IsRunning("vm1") || rtA.IsRunning("vm1") {
		t.Fatalf("after the switch: running on na %v, on nb %v", rtA.IsRunning("vm1"), rtB.IsRunning("vm1"))
	}
	wantBase, wantLog := expected(size, wr.bytes())
	tgt := "/" + poolB + "/vm1"
	if fileSum(t, filepath.Join(tgt, "base")) != wantBase || fileSum(t, filepath.Join(tgt, "log")) != wantLog {
		t.Fatalf("the target's content differs from what was written")
	}

	// The instance writes on the target; a rollback brings that back.
	mu.Lock()
	onB := wrB
	mu.Unlock()
	for onB.bytes() < 2<<20 {
		select {
		case <-w.ctx.Done():
			t.Fatal("the workload did not write on the target")
		case <-time.After(50 * time.Millisecond): // polling the workload with a deadline
		}
	}
	rb := m.must("rollback")
	t.Logf("rollback: %d bytes sent back (%d written on the target), downtime %d ms", rb.Bytes, onB.bytes(), rb.DowntimeMS)
	if !rtA.IsRunning("vm1") || rtB.IsRunning("vm1") {
		t.Fatalf("after the rollback: running on na %v, on nb %v", rtA.IsRunning("vm1"), rtB.IsRunning("vm1"))
	}
	_, wantLogB := expected(0, onB.bytes())
	if fileSum(t, filepath.Join(src, "base")) != wantBase || fileSum(t, filepath.Join(src, "log")) != wantLog ||
		fileSum(t, filepath.Join(src, "log-b")) != wantLogB {
		t.Fatalf("the source's content after the rollback differs from what was written on both nodes")
	}
	if left := append(datasets(t, poolB, "vm1"), datasets(t, poolA, "vm1@")...); len(left) > 0 {
		t.Fatalf("left after the rollback: %v", left)
	}
}

// settings appends drove.settings with the send cap given (Mbit/s).
func (w *world) settings(mbps float64) {
	w.t.Helper()
	w.append(events.TopicSettings, w.event(events.SettingsChanged{MaxRunningMigrationsPerNode: 2, SendMbpsLimit: mbps,
		ResyncMaxBytes: 50 << 20, ResyncMaxSyncs: 10, ResyncShrinkWindow: 3, ProgressTimeoutSeconds: 150}))
}

// TestMigrationPauseRateAbort: a sync capped at 1 MB/s is superseded by
// a new dispatch (a pause) and stops within 5 s; the next sync's cap is
// lifted by drove.settings while it runs and it finishes at once; an
// abort superseding a further sync leaves the source as it was, running,
// and no target dataset or migration snapshot anywhere.
func TestMigrationPauseRateAbort(t *testing.T) {
	const size = 64 << 20
	poolA, poolB := zfsenv.Pool(t, "a", 512), zfsenv.Pool(t, "b", 512)
	w := newWorld(t, []string{"na", "nb"}, instance("vm2", events.StorageZFSLocal, "na", ""))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm2")
	src := "/" + poolA + "/vm2"
	fill(t, src, size)
	wr := startWriter(src, 1<<20)
	defer wr.stop()
	rtA := zfs.NewMemRuntime("vm2")
	w.node("na", poolA, rtA, nil)
	w.node("nb", poolB, zfs.NewMemRuntime(), nil)

	m := w.migration("m2", "vm2", "na", "nb")
	m.mbps = 8 // 1 MB/s
	m.must(events.PhaseBegin)
	first := m.dispatch(events.PhaseSync)
	m.sending(first, 4<<20)
	m.syncs-- // the pass starts again
	second := m.dispatch(events.PhaseSync)
	e := m.ended(first)
	paused := time.Since(m.dispatchedAt[second])
	t.Logf("a sync superseded after 4 MiB sent ended %s within %s: %s", e.Status, paused, e.Error)
	if e.Status != events.JobCanceled || paused > 5*time.Second {
		t.Fatalf("superseded sync ended %s after %s, want canceled within 5s", e.Status, paused)
	}
	// The capped sync reported bytes, a rate near its cap and an ETA, and
	// never went backwards.
	var last events.Progress
	var rated int
	var fastest int64
	for _, p := range w.progress("na") {
		if p.Request != "m2" || p.Index != first {
			continue
		}
		if p.Current < last.Current || p.Total < last.Total {
			t.Errorf("progress went backwards: %d/%d after %d/%d", p.Current, p.Total, last.Current, last.Total)
		}
		if p.BytesPerSecond > 0 && p.ETASeconds > 0 {
			rated++
			fastest = max(fastest, p.BytesPerSecond)
			if p.BytesPerSecond > 2e6 {
				t.Errorf("a sync capped at 1 MB/s reported %d bytes/s", p.BytesPerSecond)
			}
		}
		last = p
	}
	if rated == 0 {
		t.Error("no progress of the capped sync had a rate and an ETA")
	}
	t.Logf("the capped sync reported %d rates, the highest %d bytes/s", rated, fastest)
	m.sending(second, 2<<20)
	w.settings(0) // no cap: the running sync speeds up
	lifted := time.Now()
	if e := m.ended(second); e.Status != events.JobSuccess || e.Bytes < size {
		t.Fatalf("sync after the pause ended %s with %d bytes: %s", e.Status, e.Bytes, e.Error)
	}
	if took := time.Since(lifted); took > 30*time.Second {
		t.Fatalf("the sync took %s after the cap was lifted; at 1 MB/s it needs a minute", took)
	}
	w.settings(0.4) // 50 kB/s: the next incremental crawls
	// Enough new data that it is still sending when the abort comes,
	// whatever the machine's load (the writer alone may add too little).
	extra := make([]byte, 2<<20)
	rand.NewChaCha8([32]byte{2}).Read(extra)
	if err := os.WriteFile(filepath.Join(src, "extra"), extra, 0o644); err != nil {
		t.Fatal(err)
	}
	third := m.dispatch(events.PhaseSync)
	m.sending(third, 64<<10)
	abort := m.dispatch("abort")
	if e := m.ended(third); e.Status != events.JobCanceled || time.Since(m.dispatchedAt[abort]) > 5*time.Second {
		t.Fatalf("the sync an abort superseded ended %s: %s", e.Status, e.Error)
	}
	if e := m.ended(abort); e.Status != events.JobSuccess {
		t.Fatalf("abort ended %s: %s", e.Status, e.Error)
	}
	if !rtA.IsRunning("vm2") {
		t.Fatal("the source does not run after the abort")
	}
	wr.stop()
	wantBase, wantLog := expected(size, wr.bytes())
	if fileSum(t, filepath.Join(src, "base")) != wantBase || fileSum(t, filepath.Join(src, "log")) != wantLog {
		t.Fatalf("the source's content changed")
	}
	if left := append(datasets(t, poolB, "vm2"), datasets(t, poolA, "vm2@")...); len(left) > 0 {
		t.Fatalf("left after the abort: %v", left)
	}
}

// TestMigrationFinalize: begin, sync, switch, finalize of a stopped
// instance: the source copy and every migration snapshot are gone, the
// target holds the data and the instance stays stopped.
func TestMigrationFinalize(t *testing.T) {
	const size = 16 << 20
	poolA, poolB := zfsenv.Pool(t, "a", 256), zfsenv.Pool(t, "b", 256)
	in := instance("vm3", events.StorageZFSLocal, "na", "")
	in.RunState = events.RunStopped
	w := newWorld(t, []string{"na", "nb"}, in)
	zfsenv.Run(t, "zfs", "create", poolA+"/vm3")
	fill(t, "/"+poolA+"/vm3", size)
	rtB := zfs.NewMemRuntime()
	w.node("na", poolA, zfs.NewMemRuntime(), nil)
	w.node("nb", poolB, rtB, nil)

	m := w.migration("m3", "vm3", "na", "nb")
	m.must(events.PhaseBegin)
	m.must(events.PhaseSync)
	if sw := m.must(events.PhaseSwitch); sw.DowntimeMS != 0 {
		t.Errorf("a stopped instance's switch reports %d ms down", sw.DowntimeMS)
	}
	w.placed("vm3", "nb", "na", "m3")
	m.must("finalize")
	if rtB.IsRunning("vm3") {
		t.Error("a stopped instance was started on the target")
	}
	wantBase, _ := expected(size, 0)
	if fileSum(t, "/"+poolB+"/vm3/base") != wantBase {
		t.Fatal("the target's content differs")
	}
	if left := append(datasets(t, poolA, "vm3"), datasets(t, poolB, "vm3@")...); len(left) > 0 {
		t.Fatalf("left after finalize: %v", left)
	}
}

// refusing is a runtime that cannot start anything: the target of a
// switch that fails at its last step.
type refusing struct{ *zfs.MemRuntime }

func (refusing) Start(context.Context, zfs.Instance) error {
	return errors.New("no room to start the instance on this node")
}

// TestSwitchFaultRestoresTheSource: the target cannot start the instance,
// so every attempt of the switch fails at the commit; each restarts the
// source, the phase ends in error with the instance running on the source
// as it was, the target's copy not committed; an abort then clears it.
func TestSwitchFaultRestoresTheSource(t *testing.T) {
	const size = 16 << 20
	poolA, poolB := zfsenv.Pool(t, "a", 256), zfsenv.Pool(t, "b", 256)
	w := newWorld(t, []string{"na", "nb"}, instance("vm7", events.StorageZFSLocal, "na", ""))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm7")
	fill(t, "/"+poolA+"/vm7", size)
	rtA := zfs.NewMemRuntime("vm7")
	var stops atomic.Int64
	rtA.OnStop = func(zfs.Instance) { stops.Add(1) }
	w.node("na", poolA, rtA, nil)
	w.nodeWith("nb", poolB, refusing{zfs.NewMemRuntime()})

	m := w.migration("m7", "vm7", "na", "nb")
	m.must(events.PhaseBegin)
	m.must(events.PhaseSync)
	e := m.ended(m.dispatch(events.PhaseSwitch))
	t.Logf("switch ended %s after %d stops of the source: %s", e.Status, stops.Load(), e.Error)
	if e.Status != events.JobError || !strings.Contains(e.Error, "no room") {
		t.Fatalf("switch ended %s: %s; want an error from the target's start", e.Status, e.Error)
	}
	if !rtA.IsRunning("vm7") || stops.Load() == 0 {
		t.Fatalf("after the failed switch the source runs: %v (stopped %d times)", rtA.IsRunning("vm7"), stops.Load())
	}
	if c := zfsenv.Run(t, "zfs", "get", "-H", "-o", "value", "drove:committed", poolB+"/vm7"); strings.Contains(c, "m7") {
		t.Fatalf("the target's copy is marked committed: %s", c)
	}
	wantBase, _ := expected(size, 0)
	if fileSum(t, "/"+poolA+"/vm7/base") != wantBase {
		t.Fatal("the source's content changed")
	}
	m.must("abort")
	if left := append(datasets(t, poolB, "vm7"), datasets(t, poolA, "vm7@")...); len(left) > 0 {
		t.Fatalf("left after the abort: %v", left)
	}
}
