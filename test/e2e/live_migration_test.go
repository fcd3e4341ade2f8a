package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/qemu"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/test/testenv"
)

// Per-instance live migrations of a QEMU VM on shared storage (rbd),
// through the whole system: the gateway, the coordinator, two executors
// with the QEMU driver (software emulation), the projector. The guest
// (qemu.FillForever) rewrites its RAM round and round, each round with a
// counter one higher: the counter read on the target after the switch
// continuing from the source's proves the guest moved without a reboot.

const (
	liveVM     = "vm-1"
	liveMemMiB = 32
	liveWait   = 3 * time.Minute
	// liveWriteRate is how fast the guest writes its disk, by its clock.
	liveWriteRate = 1 << 20
)

// liveEnv is env with the QEMU drivers of its two nodes.
type liveEnv struct {
	*env
	drivers map[string]*qemu.Driver
	src     string
	dst     string
	disk    string // the guest's disk, shared
}

// liveCluster: node-1 and node-2 in g1, vm-1 (rbd, 32 MiB, running) on
// node-1. The instance policy lets so small a VM be.
func liveCluster() *planner.Cluster {
	pol := planner.DefaultIPolicy()
	pol.MinMax[0].Min.MemorySize = 16
	c := &planner.Cluster{Name: "live", Tags: []string{}, Policy: pol,
		Groups: []planner.Group{{UUID: "00000000-0000-4000-8000-000000000001", Name: "g1", AllocPolicy: planner.Preferred, Policy: pol}}}
	for _, n := range []string{"node-1", "node-2"} {
		c.Nodes = append(c.Nodes, planner.Node{Name: n, TotalMemory: 16 << 10, ReservedMemory: 1 << 10,
			TotalDisk: 16 << 10, TotalCPUs: 8, TotalSpindles: 8, FreeSpindles: 8, VMCapable: true, Tags: []string{}})
	}
	c.Instances = []planner.Instance{{Name: liveVM, Memory: liveMemMiB, DiskSpace: 1024, Disks: []planner.Disk{{Size: 1024}},
		VCPUs: 1, SpindleUse: 1, NICs: 1, Tags: []string{}, State: planner.Up, Owner: "demo",
		Storage: planner.RBD, Primary: 0, Secondary: planner.NoNode}}
	clustergen.Recount(c)
	return c
}

// startLive starts the system with a QEMU driver per node (tune applied
// to each configuration) and the guest running on node-1.
func startLive(t *testing.T, tune func(*qemu.Config)) *liveEnv {
	t.Helper()
	// The guest writes its disk too (on IDE, the bus it speaks), with
	// its clock stamps: a switch's pause shows in its own data.
	return startLiveGuest(t, tune, qemu.Guest{MemoryMiB: liveMemMiB, Workload: qemu.FillForever, DiskBytesPerSecond: liveWriteRate})
}

// startLiveGuest is startLive with the guest g: one that fills its
// memory once and halts is waited for until it has filled it.
func startLiveGuest(t *testing.T, tune func(*qemu.Config), g qemu.Guest) *liveEnv {
	t.Helper()
	shared := t.TempDir()
	disk := func(inst string) (string, error) { return filepath.Join(shared, inst+".raw"), nil }
	if err := g.WriteDisk(filepath.Join(shared, liveVM+".raw"), 32); err != nil {
		t.Fatal(err)
	}
	l := &liveEnv{drivers: map[string]*qemu.Driver{}, src: "node-1", dst: "node-2", disk: filepath.Join(shared, liveVM+".raw")}
	for _, n := range []string{l.src, l.dst} {
		dir, err := os.MkdirTemp("", "dl") // short: QMP socket paths are limited
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		cfg := qemu.Config{Node: n, Dir: filepath.Join(dir, "run"), Disk: disk, DiskBus: "ide", PollInterval: 50 * time.Millisecond,
			QMPTimeout: 30 * time.Second, Logger: testLogger()}
		if tune != nil {
			tune(&cfg)
		}
		d, err := qemu.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Destroy) // after the system stopped
		l.drivers[n] = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := l.drivers[l.src].Start(ctx, liveVM, events.Size{MemoryMiB: liveMemMiB, VCPUs: 1}); err != nil {
		t.Fatal(err)
	}
	l.env = startWith(t, func(cfg *allinone.Config) {
		cfg.Seed = liveCluster
		cfg.Driver = func(_ context.Context, node string) (executor.Driver, error) { return l.drivers[node], nil }
	}, "")
	for _, n := range []string{l.src, l.dst} {
		l.waitFor(n+" in the views", time.Minute, func() bool {
			var node struct {
				Name string `json:"name"`
			}
			return l.api.Get(ctx, "/v1/nodes/"+n, &node) == nil && node.Name == n
		})
	}
	if g.Workload == qemu.FillOnce {
		l.waitFor("the guest's memory filled", time.Minute, func() bool { return l.counter(l.src) > 0 })
		return l
	}
	l.counting(l.src)
	l.waitFor("three seconds of the guest's writes", time.Minute, func() bool { return guestClockReady(l.disk, liveWriteRate) })
	return l
}

// guestClockReady says whether the writing guest with its disk at path
// has written three seconds of chunks at rate: its clock stamps measure
// a pause once it has seen three edges of the RTC's seconds before it
// (qemu.GuestGap). It reads the disk while the guest runs (a torn read
// says no): pausing the guest to read would be a pause of its own, which
// a window around a switch soon after may hold.
func guestClockReady(path string, rate int) bool {
	w, err := qemu.ReadGuestWrites(path)
	return err == nil && int(w.Chunks) > 3*rate/65536
}

// counter reads the guest's round counter (its first page) on node.
func (l *liveEnv) counter(node string) uint64 {
	l.t.Helper()
	return guestCounter(l.t, l.drivers[node], liveVM)
}

// guestCounter reads the round counter of qemu.FillForever's guest: the
// first word of its first rewritten page.
func guestCounter(t *testing.T, d *qemu.Driver, instance string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := d.HMP(ctx, instance, "xp /1wx 0x100000")
	if err != nil {
		t.Fatalf("reading the guest's counter: %v", err)
	}
	_, hex, ok := strings.Cut(strings.TrimSpace(out), ": ")
	n, perr := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(hex), "0x"), 16, 32)
	if !ok || perr != nil {
		t.Fatalf("the guest's counter: %q", out)
	}
	return n
}

// counting waits until the guest's counter moves on node.
func (l *liveEnv) counting(node string) {
	l.t.Helper()
	first := l.counter(node)
	l.waitFor("the guest counting on "+node, time.Minute, func() bool { return l.counter(node) > first })
}

// vmOn says whether a QEMU process of the instance runs on node.
func (l *liveEnv) vmOn(node string) bool {
	l.t.Helper()
	st, err := l.drivers[node].Status(context.Background(), liveVM)
	if err != nil {
		l.t.Fatalf("status on %s: %v", node, err)
	}
	return st.Running
}

// viewStatuses reads the move_status view of a migration: node → status.
func (l *liveEnv) viewStatuses(id string) map[string]string {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, l.db)
	if err != nil {
		l.t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT node, status FROM drove.move_status WHERE request = $1", id)
	if err != nil {
		l.t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var n, s string
		if err := rows.Scan(&n, &s); err != nil {
			l.t.Fatal(err)
		}
		out[n] = s
	}
	if err := rows.Err(); err != nil {
		l.t.Fatal(err)
	}
	return out
}

// awaitView waits until the view shows the source and target statuses.
func (l *liveEnv) awaitView(id, src, dst string) {
	l.t.Helper()
	l.waitFor(fmt.Sprintf("move_status of %s: %s %s, %s %s", id, l.src, src, l.dst, dst), liveWait, func() bool {
		v := l.viewStatuses(id)
		return v[l.src] == src && v[l.dst] == dst
	})
}

// loggedStatuses is every MoveStatusReported of migration id in the
// log, in order, as "node status".
func (l *liveEnv) loggedStatuses(id string) []string {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for _, s := range testenv.Read(l.t, ctx, l.kcfg, func(s events.MoveStatusReported) bool { return s.Request == id }) {
		out = append(out, s.Node+" "+string(s.Status))
	}
	return out
}

// statusPairs checks the log's statuses of id: the begin's pair, then
// the end's, each pair in either order within itself.
func (l *liveEnv) statusPairs(id string, pairs ...[2]events.NodeMoveStatus) {
	l.t.Helper()
	got := l.loggedStatuses(id)
	var want []string
	for _, p := range pairs {
		want = append(want, l.src+" "+string(p[0]), l.dst+" "+string(p[1]))
	}
	if len(got) != len(want) {
		l.t.Fatalf("statuses of %s in the log: %v, want %v", id, got, want)
	}
	for i := 0; i < len(want); i += 2 {
		g, w := slices.Clone(got[i:i+2]), slices.Clone(want[i:i+2])
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			l.t.Fatalf("statuses of %s in the log: %v, want %v", id, got, want)
		}
	}
}

// begun begins a migration of the VM to node-2, on demand, and waits
// for the begin's end: the incoming VM listens there.
func (l *liveEnv) begun() string {
	l.t.Helper()
	id := l.act(liveVM, "begin", client.MigrateOptions{Target: l.dst, Reason: "e2e: live migration"})
	l.awaitRecord(id, liveWait, "begun", func(m wire.InstanceMigration) bool { return m.State == "paused" || m.State == "failed" })
	if m := l.migration(id); m.State != "paused" {
		l.t.Fatalf("after begin: %+v", m)
	}
	if !l.vmOn(l.dst) {
		l.t.Fatalf("no incoming VM on %s after begin", l.dst)
	}
	l.awaitView(id, string(events.StatusMigrationSource), string(events.StatusMigrationDestination))
	return id
}

var (
	beginPair = [2]events.NodeMoveStatus{events.StatusMigrationSource, events.StatusMigrationDestination}
	movedPair = [2]events.NodeMoveStatus{events.StatusDown, events.StatusUp}
	stayPair  = [2]events.NodeMoveStatus{events.StatusUp, events.StatusDown}
)

// On demand: begin, sync, switch, finalize. The counter continues on the
// target from where it was on the source, the downtime is in the record,
// the source VM is gone, and the statuses go migration source/destination,
// then down/up. The sync's send is capped at 50 MB/s: uncapped (8.4 GB/s
// read, the guest's pages mostly zero) the guest dirtied less in a pass
// than a millisecond of it and stopped at the switch point in every sync,
// and the switch followed by itself (TestLiveMigrationIdleGuest); capped
// so through the switch, it does not converge.
func TestLiveMigrationShared(t *testing.T) {
	l := startLive(t, nil)
	l.settings(map[string]any{"send_mbps_limit": 400})
	id := l.begun()
	l.act(liveVM, "sync", client.MigrateOptions{})
	m := l.awaitRecord(id, liveWait, "sync done", func(m wire.InstanceMigration) bool { return m.Syncs == 1 || m.State == "failed" })
	if m.State != "paused" || m.LastSyncBytes < 16<<20 {
		t.Fatalf("after the sync: %+v; want paused, at least the guest's 16 MiB sent", m)
	}
	l.settings(map[string]any{"send_mbps_limit": 0})
	before := l.counter(l.src)
	asked := time.Now()
	l.act(liveVM, "switch", client.MigrateOptions{})
	m = l.awaitState(id, liveWait, "successful", "failed", "aborted")
	if m.State != "successful" || !m.Switched {
		t.Fatalf("after the switch: %+v", m)
	}
	// The guest's gap as its own stamps on the target's disk show it
	// (its timeline keeps 17 minutes of them at 1 MiB/s), from the
	// switch asked to its end seen: the record's figure must be the
	// same, read there by the executor.
	gap, err := qemu.GuestGap(l.disk, asked, time.Now())
	if err != nil {
		t.Fatalf("the guest's clock: %v", err)
	}
	after := l.counter(l.dst)
	if after < before {
		t.Fatalf("the guest's counter is %d on %s after the switch, %d on %s before: it restarted", after, l.dst, before, l.src)
	}
	l.counting(l.dst)
	dm := downtimeRE.FindStringSubmatch(m.Message)
	if dm == nil {
		t.Fatalf("no downtime in the record's message %q", m.Message)
	}
	t.Logf("counter %d on %s before the switch, %d on %s after; downtime %s ms; %s", before, l.src, after, l.dst, dm[1], m.Message)
	checkDowntime(t, m, gap, sharedLiveDowntimeBound, guestTolerance)
	if l.vmOn(l.src) {
		t.Errorf("the source VM still runs on %s", l.src)
	}
	l.awaitPrimary(liveVM, l.dst, time.Minute)
	l.awaitView(id, string(events.StatusDown), string(events.StatusUp))
	l.statusPairs(id, beginPair, movedPair)
	l.act(liveVM, "finalize", client.MigrateOptions{})
	l.waitFor("finalized", liveWait, func() bool { return l.migration(id).Finalized })
	l.counting(l.dst)
}

// A guest that dirties nothing (it filled its memory once and halted)
// reaches the switch point in its first sync: QEMU stops it there, and
// rather than leave it down until the operator's switch, the switch
// follows at once. The record says why; the guest runs on the target,
// its memory as it was.
func TestLiveMigrationIdleGuest(t *testing.T) {
	l := startLiveGuest(t, nil, qemu.Guest{MemoryMiB: liveMemMiB, Workload: qemu.FillOnce})
	before := l.counter(l.src)
	id := l.begun()
	l.act(liveVM, "sync", client.MigrateOptions{})
	m := l.awaitState(id, liveWait, "successful", "failed", "aborted")
	if m.State != "successful" || !m.Switched {
		t.Fatalf("after the sync: %+v; want switched by itself", m)
	}
	said := testenv.Read(t, context.Background(), l.kcfg, func(r events.MigrationStateChanged) bool {
		return r.Migration == id && strings.Contains(r.Message, "stopped at the switch point (nothing was left to copy), so it switches at once")
	})
	if len(said) == 0 {
		t.Errorf("no record of %s says the sync left the guest at the switch point", id)
	}
	if after := l.counter(l.dst); after != before {
		t.Errorf("the guest's counter is %d on %s, %d on %s before: want its memory as it was", after, l.dst, before, l.src)
	}
	if m.DowntimeMS <= 0 || time.Duration(m.DowntimeMS)*time.Millisecond > sharedLiveDowntimeBound {
		t.Errorf("Drove reports %d ms down; want some, under %s", m.DowntimeMS, sharedLiveDowntimeBound)
	}
	if l.vmOn(l.src) {
		t.Errorf("the source VM still runs on %s", l.src)
	}
	t.Logf("record: %s", m.Message)
}

// interrupted begins a migration, starts a sync throttled to 1 MB/s (a
// pass of the guest's memory takes many seconds) and waits until its
// pre-copy sends; then cut interrupts it, and the migration must end in
// one of states with the guest running on the source alone, its counter
// going on, the target's VM gone, the statuses then up/down.
func (l *liveEnv) interrupted(cut func(id string), states ...string) wire.InstanceMigration {
	l.t.Helper()
	l.settings(map[string]any{"send_mbps_limit": 8})
	id := l.begun()
	l.act(liveVM, "sync", client.MigrateOptions{})
	l.awaitRecord(id, liveWait, "the pre-copy sending", func(m wire.InstanceMigration) bool { return m.Phase == "sync" && m.CurrentBytes > 1<<20 })
	before := l.counter(l.src)
	cut(id)
	m := l.awaitState(id, liveWait, states...)
	l.waitFor("the incoming VM gone from "+l.dst, liveWait, func() bool { return !l.vmOn(l.dst) })
	if after := l.counter(l.src); after < before {
		l.t.Fatalf("the guest's counter went from %d to %d on %s", before, after, l.src)
	}
	l.counting(l.src)
	if p, _ := l.runState(liveVM); p != l.src {
		l.t.Errorf("%s placed on %s, want %s", liveVM, p, l.src)
	}
	l.awaitView(id, string(events.StatusUp), string(events.StatusDown))
	l.statusPairs(id, beginPair, stayPair)
	return m
}

// An abort during the pre-copy: QEMU's migration is cancelled, the
// source runs on as before and the incoming VM is destroyed.
func TestLiveMigrationAbortDuringPreCopy(t *testing.T) {
	l := startLive(t, nil)
	m := l.interrupted(func(string) { l.act(liveVM, "abort", client.MigrateOptions{}) }, "aborted")
	t.Logf("record: %s", m.Message)
}

// The target killed during the pre-copy: the sync fails, the migration
// with it, and the source runs on.
func TestLiveMigrationTargetKilled(t *testing.T) {
	l := startLive(t, nil)
	m := l.interrupted(func(string) {
		st, err := l.drivers[l.dst].Status(context.Background(), liveVM)
		if err != nil || st.Pid <= 0 {
			t.Fatalf("the incoming VM on %s: %+v, %v", l.dst, st, err)
		}
		if err := syscall.Kill(st.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}, "failed")
	if !strings.Contains(m.Error, "sync phase failed") {
		t.Errorf("record error %q, want the sync's failure", m.Error)
	}
	t.Logf("record: %s / %s", m.Message, m.Error)
}

// A switch whose pre-copy cannot converge (the guest rewrites its memory
// faster than the 2 MB/s cap sends it) goes post-copy after the
// completion timeout; the source says paused, an abort is refused with a
// message that says why, and the move finishes with the counter going on.
func TestLiveMigrationPostCopyRefusesAbort(t *testing.T) {
	l := startLive(t, func(c *qemu.Config) {
		c.AllowPostCopy = true
		c.CompletionTimeoutPerGiB = 64 * time.Second // 2 s for the guest's 32 MiB
	})
	l.settings(map[string]any{"send_mbps_limit": 16})
	id := l.begun()
	l.act(liveVM, "sync", client.MigrateOptions{})
	l.awaitRecord(id, liveWait, "sync done", func(m wire.InstanceMigration) bool { return m.Syncs == 1 || m.State == "failed" })
	before := l.counter(l.src)
	l.act(liveVM, "switch", client.MigrateOptions{})
	l.waitFor("the source paused in post-copy", time.Minute, func() bool { return l.viewStatuses(id)[l.src] == string(events.StatusPaused) })
	l.act(liveVM, "abort", client.MigrateOptions{})
	l.awaitRecord(id, liveWait, "the abort refused", func(m wire.InstanceMigration) bool {
		return strings.Contains(m.Message, "abort refused") || m.State != "running"
	})
	if m := l.migration(id); !strings.Contains(m.Message, "post-copy") || !strings.Contains(m.Message, "can no longer be aborted") {
		t.Errorf("after the abort: %+v; want it refused for the post-copy", m)
	}
	m := l.awaitState(id, liveWait, "successful", "failed", "aborted")
	if m.State != "successful" || !strings.Contains(m.Message, "post-copy") {
		t.Fatalf("after the switch: %+v", m)
	}
	if after := l.counter(l.dst); after < before {
		t.Fatalf("the guest's counter is %d after the switch, %d before", after, before)
	}
	l.counting(l.dst)
	l.awaitView(id, string(events.StatusDown), string(events.StatusUp))
	got := l.loggedStatuses(id)
	want := []string{l.src + " " + string(events.StatusPaused), l.src + " down", l.dst + " up"}
	if len(got) != 5 || !slices.Equal(got[2:], want) {
		t.Errorf("statuses in the log %v, want the begin's pair then %v", got, want)
	}
	t.Logf("record: %s", m.Message)
}
