package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
)

// Per-instance migrations (RFD 34) over HTTP on real ZFS: the ZFS
// driver's Migrator moves a zfs-local instance's dataset while its
// process keeps writing into it.

// zfsMigrationWait bounds one migration step on a loaded machine.
const zfsMigrationWait = 3 * time.Minute

// moveLog keeps, with the time each arrived, the reports of the moves
// and migration phases the ZFS drivers ran (zfs.Config.OnMove).
type moveLog struct {
	mu   sync.Mutex
	reps []timedReport
}

type timedReport struct {
	node string
	at   time.Time
	rep  zfs.MoveReport
}

func (l *moveLog) tune(node string, cfg *zfs.Config) {
	cfg.OnMove = func(r zfs.MoveReport) {
		l.mu.Lock()
		l.reps = append(l.reps, timedReport{node, time.Now(), r})
		l.mu.Unlock()
	}
}

// of returns the reports of migration id's phases, in order of their
// seq, the last attempt of each (the executor retries transient faults).
func (l *moveLog) of(id string) []timedReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []timedReport
	at := map[string]int{}
	for _, r := range l.reps {
		if !strings.HasPrefix(r.rep.Key, id+"#") {
			continue
		}
		if i, seen := at[r.rep.Key]; seen {
			out[i] = r
			continue
		}
		at[r.rep.Key] = len(out)
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b timedReport) int { return seqOf(a.rep.Key) - seqOf(b.rep.Key) })
	return out
}

func seqOf(key string) int {
	_, s, _ := strings.Cut(key, "#")
	n, _ := strconv.Atoi(s)
	return n
}

// sent is what a report's sends put on the wire.
func sent(r zfs.MoveReport) int64 {
	var n int64
	for _, s := range r.Syncs {
		n += s.Bytes
	}
	return n
}

// startZfsMigrations is startZfs with the drivers' reports logged.
func startZfsMigrations(t *testing.T) (*zenv, *moveLog) {
	log := &moveLog{}
	return startZfs(t, log.tune), log
}

// pos reads the workload's place in its ring on node: it changes while
// the workload runs there.
func (z *zenv) pos(node, instance string) string {
	z.t.Helper()
	b, err := os.ReadFile(filepath.Join(z.mountpoint(node, instance), "pos"))
	if err != nil {
		z.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// writing waits until instance's workload has written on node.
func (z *zenv) writing(node, instance string) {
	z.t.Helper()
	first := z.pos(node, instance)
	z.waitFor(instance+" writing on "+node, time.Minute, func() bool { return z.pos(node, instance) != first })
}

// nowhere checks that no node holds a dataset or snapshot of instance
// but its own node, and that only without migration snapshots.
func (z *zenv) onlyOn(instance, node string) {
	z.t.Helper()
	for n := range z.demo.Pools {
		got := z.datasets(n, instance)
		switch {
		case n == node && !slices.Equal(got, []string{""}):
			z.t.Errorf("%s on %s: %v, want the dataset alone, no migration snapshot", instance, n, got)
		case n != node && len(got) != 0:
			z.t.Errorf("%s: %v left on %s", instance, got, n)
		}
	}
}

var downtimeRE = regexp.MustCompile(`after (\d+) ms down`)

// An automatic migration of a zfs-local instance whose workload writes
// throughout: at least two syncs, a final delta smaller than the first
// send, the record successful with the number of syncs, the last sync's
// size as sent and the downtime; the workload runs on the target with the
// content the source held at its stop; finalize drops the source copy.
func TestZfsMigrationAutomatic(t *testing.T) {
	z, log := startZfsMigrations(t)
	const name = "local-1"
	src := z.instance(name).Primary
	z.writing(src, name)
	// Re-sync while a sync sends over 2 MiB: the first (the whole
	// dataset) does, the next ones (what the workload rewrote) shrink.
	z.settings(map[string]any{"resync_max_bytes": 2 << 20})
	id := z.act(name, "automatic", client.MigrateOptions{Reason: "e2e: zfs automatic"})
	m := z.awaitState(id, zfsMigrationWait, "successful", "failed", "aborted")
	if m.State != "successful" || !m.Switched {
		t.Fatalf("record %+v", m)
	}
	reps := log.of(id)
	var syncs []int64
	var sw *zfs.MoveReport
	for i := range reps {
		r := &reps[i].rep
		if r.Err != nil {
			t.Errorf("phase %s: %v", r.Key, r.Err)
		}
		if _, final := r.FinalSync(); final {
			sw = r
		} else {
			syncs = append(syncs, sent(*r))
		}
	}
	t.Logf("record: %d syncs, last %d bytes; syncs sent %v; %s", m.Syncs, m.LastSyncBytes, syncs, m.Message)
	if m.Syncs < 2 || m.Syncs != len(syncs) {
		t.Errorf("the record counts %d syncs, the source ran %d sync phases (%v); want at least 2", m.Syncs, len(syncs), syncs)
	}
	if len(syncs) > 0 && m.LastSyncBytes != syncs[len(syncs)-1] {
		t.Errorf("the record's last sync size is %d, the last sync sent %d", m.LastSyncBytes, syncs[len(syncs)-1])
	}
	if sw == nil {
		t.Fatalf("no switch report among %d reports", len(reps))
	}
	if len(syncs) == 0 || sw.FinalDelta <= 0 || sw.FinalDelta >= syncs[0] {
		t.Errorf("final delta %d bytes, first send %v: want a real delta smaller than the first send", sw.FinalDelta, syncs)
	}
	dm := downtimeRE.FindStringSubmatch(m.Message)
	if dm == nil {
		t.Fatalf("no downtime in the record's message %q", m.Message)
	}
	if ms, _ := strconv.Atoi(dm[1]); ms <= 0 || int64(ms) > sw.Downtime.Milliseconds()+1 {
		t.Errorf("the record says %d ms down, the driver measured %s", ms, sw.Downtime)
	}
	z.awaitPrimary(name, m.Target, time.Minute)
	if !z.running(m.Target, name) || z.running(src, name) {
		t.Fatalf("after the switch: running on %s %v, on %s %v", m.Target, z.running(m.Target, name), src, z.running(src, name))
	}
	z.switchedIntact(name, src, m.Target)
	z.baseIntact(m.Target, name)
	z.writing(m.Target, name)
	checkDowntime(t, m, z.workloadGap(m.Target, name), zfsOfflineDowntimeBound, zfsProcessTolerance)
	if len(z.datasets(src, name)) == 0 {
		t.Errorf("the source copy on %s is gone before finalize", src)
	}
	z.act(name, "finalize", client.MigrateOptions{})
	z.waitFor("finalized", zfsMigrationWait, func() bool { return z.migration(id).Finalized })
	z.onlyOn(name, m.Target)
	z.refused(name, "rollback", http.StatusConflict, "finalized")
	z.replayEqual()
}

// On demand: begin, sync, sync, switch, each through the API; then
// rollback brings back to the source what the workload wrote on the
// target meanwhile, and the target copy goes.
func TestZfsMigrationOnDemandAndRollback(t *testing.T) {
	z, log := startZfsMigrations(t)
	const name = "local-2"
	src := z.instance(name).Primary
	id := z.act(name, "begin", client.MigrateOptions{})
	m := z.awaitState(id, zfsMigrationWait, "paused")
	dst := m.Target
	for i := 1; i <= 2; i++ {
		z.act(name, "sync", client.MigrateOptions{})
		m = z.awaitRecord(id, zfsMigrationWait, "paused after sync "+strconv.Itoa(i), func(m wire.InstanceMigration) bool {
			return m.State == "paused" && m.Syncs == i
		})
		snaps := z.snapshots(dst, name)
		if len(snaps) == 0 || !slices.Contains(z.snapshots(src, name), snaps[len(snaps)-1]) {
			t.Fatalf("after sync %d: %s holds %v, %s %v", i, dst, snaps, src, z.snapshots(src, name))
		}
		if !z.running(src, name) {
			t.Fatalf("after sync %d the workload does not run on %s", i, src)
		}
	}
	if n := len(log.of(id)); n != 2 {
		t.Errorf("%d sync reports, want 2", n)
	}
	z.act(name, "switch", client.MigrateOptions{})
	m = z.awaitState(id, zfsMigrationWait, "successful", "failed")
	if m.State != "successful" {
		t.Fatalf("switch: %+v", m)
	}
	z.awaitPrimary(name, dst, time.Minute)
	z.switchedIntact(name, src, dst)
	z.baseIntact(dst, name)
	z.writing(dst, name)
	checkDowntime(t, m, z.workloadGap(dst, name), zfsOfflineDowntimeBound, zfsProcessTolerance)

	z.refused(name, "abort", http.StatusConflict, "rollback")
	z.act(name, "rollback", client.MigrateOptions{})
	m = z.awaitState(id, zfsMigrationWait, "aborted", "failed")
	if m.State != "aborted" {
		t.Fatalf("rollback: %+v", m)
	}
	z.awaitPrimary(name, src, time.Minute)
	// What the target held when its workload stopped is what the source
	// started from: the writes made on the target are on the source.
	z.switchedIntact(name, dst, src)
	z.baseIntact(src, name)
	z.writing(src, name)
	z.waitFor("the target copy gone", time.Minute, func() bool { return len(z.datasets(dst, name)) == 0 })
	z.replayEqual()
}

// Abort during a sync: the send stops, the target dataset and every
// migration snapshot go, the source is unchanged and its workload runs.
func TestZfsMigrationAbortDuringSync(t *testing.T) {
	z, _ := startZfsMigrations(t)
	const name = "local-3"
	src := z.instance(name).Primary
	z.settings(map[string]any{"send_mbps_limit": 1}) // 4 MiB take half a minute
	id := z.act(name, "automatic", client.MigrateOptions{})
	m := z.awaitRecord(id, zfsMigrationWait, "a sync under way", func(m wire.InstanceMigration) bool {
		return m.State == "running" && m.Phase == "sync" && m.CurrentBytes > 0
	})
	z.act(name, "abort", client.MigrateOptions{})
	m = z.awaitState(id, zfsMigrationWait, "aborted", "failed")
	if m.State != "aborted" {
		t.Fatalf("abort: %+v", m)
	}
	if node, run := z.runState(name); node != src || run != "running" {
		t.Fatalf("after the abort %s is on %s %s, want %s running", name, node, run, src)
	}
	if !z.running(src, name) {
		t.Fatalf("the workload does not run on %s after the abort", src)
	}
	z.onlyOn(name, src)
	z.baseIntact(src, name)
	z.writing(src, name)
	z.replayEqual()
}
