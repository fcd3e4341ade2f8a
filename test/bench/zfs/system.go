package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/test/bench/cli"
	"github.com/drovehq/drove/test/bench/system"
	"github.com/drovehq/drove/test/zfsenv"
)

// The per-instance migration through the whole system: an Apache Kafka
// broker and the embedded Postgres, the projector, the planner service (its migration
// coordinator), one executor per node with the ZFS driver and the process
// runtime, and the gateway, driven over HTTP as a user would. The
// instance is a zfs-local dataset of sizeMiB whose process rewrites
// writeMiBps into it; the migration is automatic.

// migrationResult is test/bench/results/zfs-migration.json.
type migrationResult struct {
	// The first move's switch (its downtime_ms is the record's).
	moveSwitch
	// ThroughputRatio is the median of the moves' first syncs through
	// the whole system (bytes over the time from its dispatch to its
	// end, both in the log) divided by the median of every timed bare
	// `zfs send | zfs receive` of the same dataset in this run: two
	// before the system starts, one beside it before each move, two
	// after the moves. Bare runs here vary by a third from one to the
	// next (docs/benchmarks.md), so medians over runs interleaved with
	// the moves, as farm-bench's A/B ratios are, hold like against like.
	ThroughputRatio float64 `json:"throughput_ratio"`
	// SendRatio is the median of those first syncs' sends alone (as
	// the driver timed them) divided by the same bare median.
	SendRatio      float64 `json:"send_ratio"`
	BareMiBps      float64 `json:"bare_mibps"`       // the bare runs' median
	FirstSyncMiBps float64 `json:"first_sync_mibps"` // the first syncs' median
	// Every timed bare run and every move's first sync, in order.
	BareRunsMiBps   []float64 `json:"bare_runs_mibps"`
	FirstSyncsMiBps []float64 `json:"first_syncs_mibps"`
	// CopyRelayRatio is the median of the copy relays (copyRelay, one
	// beside each bare run) divided by the bare runs' median: what two
	// stages that only copy every byte through pipes cost this machine
	// in this run. Drove's two ends do that and more (a cipher each way,
	// TCP between them), so on a day when this is under 0.9, so is any
	// relay's throughput_ratio.
	CopyRelayRatio     float64   `json:"copy_relay_ratio"`
	CopyRelayRunsMiBps []float64 `json:"copy_relay_runs_mibps"`
	// BestRatio is the fastest first sync against the fastest bare run:
	// the extremes of two noisy samples, a stricter bar than the
	// medians, kept to compare with the runs before ThroughputRatio was
	// the medians'.
	BestRatio      float64 `json:"best_ratio"`
	FirstSyncBytes int64   `json:"first_sync_bytes"` // the first move's
	SizeMiB        int     `json:"size_mib"`
	WriteMiBps     float64 `json:"write_mibps"`
	LoadAverage    string  `json:"load_average"`
	// Where the CPU went in the bare runs and the first syncs.
	CPU cpuFigures `json:"cpu"`
}

func runSystem(sizeMiB int, writeMiBps float64, out, downtimeOut string, moves int, cpuProfile string) (err error) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tmp, err := os.MkdirTemp("", "drove-bench-zfs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cluster := benchCluster()
	demo := &allinone.ZFSDemo{Pools: map[string]string{}, StateDir: filepath.Join(tmp, "state"),
		ContentBytes: int64(sizeMiB) << 20, Logger: quiet, Workload: benchWorkload(writeMiBps)}
	var mu sync.Mutex
	var reports []zfs.MoveReport
	demo.Tune = func(_ string, cfg *zfs.Config) {
		cfg.OnMove = func(r zfs.MoveReport) {
			mu.Lock()
			reports = append(reports, r)
			mu.Unlock()
		}
	}
	for _, n := range cluster.Nodes {
		pool, err := zfsenv.CreatePool("sys_"+n.Name, sizeMiB*3+512)
		if err != nil {
			return err
		}
		defer zfsenv.Release(pool, &err)
		demo.Pools[n.Name] = pool
	}
	defer func() { _, _ = demo.StopWorkloads(context.Background()) }()
	fmt.Printf("system: writing %d MiB into the instance's dataset ...\n", sizeMiB)
	if err := demo.Provision(ctx, cluster); err != nil {
		return err
	}
	src, dst := cluster.Nodes[0].Name, cluster.Nodes[1].Name
	trace := traceCPU(100 * time.Millisecond)
	defer trace.Stop()
	bares, relays, err := bareRuns(demo.Dataset(src, "local-1"), demo.Pools[dst], 2)
	if err != nil {
		return err
	}

	sys, err := system.Start(ctx, tmp, cluster, demo.Driver)
	if err != nil {
		return err
	}
	defer sys.Stop()
	sys.BeforeMove = func(from, to string) error {
		b, r, err := bareRuns(demo.Dataset(from, "local-1"), demo.Pools[to], 1)
		bares, relays = append(bares, b...), append(relays, r...)
		return err
	}
	stopProfile, err := profile(cpuProfile)
	if err != nil {
		return err
	}
	ms, err := sys.MoveBackAndForth(ctx, "local-1", src, dst, moves)
	stopProfile()
	if err != nil {
		return err
	}
	// The bare send again, beside the running system, where the
	// instance now is.
	at, other := src, dst
	if len(ms)%2 == 1 {
		at, other = dst, src
	}
	after, relayed, err := bareRuns(demo.Dataset(at, "local-1"), demo.Pools[other], 2)
	if err != nil {
		return err
	}
	bares, relays = append(bares, after...), append(relays, relayed...)
	d := system.Downtimes(ms...)
	system.PrintDowntimes("zfs_offline", d)
	if err := system.WriteDowntime(downtimeOut, "zfs_offline", d); err != nil {
		return err
	}
	mu.Lock()
	reps := append([]zfs.MoveReport(nil), reports...)
	mu.Unlock()
	return report(ctx, sys.Brokers, ms, reps, bares, relays, trace, sizeMiB, writeMiBps, out)
}

// profile starts a CPU profile into file ("": none) and returns its stop.
func profile(file string) (func(), error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// benchCluster is two nodes and one zfs-local instance, local-1.
func benchCluster() *planner.Cluster {
	c := allinone.ZFSCluster(1, 2)
	var keep []planner.Instance
	for _, in := range c.Instances {
		if in.Name == "local-1" {
			keep = append(keep, in)
		}
	}
	c.Instances = keep
	return c
}

// benchWorkload rewrites 256 KiB blocks of a 128 MiB ring at mibps.
func benchWorkload(mibps float64) allinone.Workload {
	const block = 256 << 10
	every := time.Duration(float64(time.Second) * block / (mibps * (1 << 20)))
	return allinone.Workload{Block: block, Blocks: 512, Interval: every}
}

// copyRelay is what a copy relay puts between `zfs send` and `zfs
// receive`: two processes, each reading every byte out of a pipe and
// writing it into the next, as Drove's two ends do, with no cipher and
// no network between them.
const copyRelay = " | cat | cat"

// bareRuns times `zfs send | zfs receive` of a snapshot of ds into pool,
// once to warm the caches, then runs times, each followed by the same
// send through a copy relay.
// The send has the flags the driver's first sync has: -R where this
// zfs replicates (a replication stream costs zfs-fuse about 5 % more).
func bareRuns(ds, pool string, runs int) (bares, relays []span, err error) {
	snap := ds + "@bare"
	if err := sh("zfs snapshot " + snap); err != nil {
		return nil, nil, err
	}
	defer zfsenv.DestroyDataset(snap)
	if zfs.Detect(context.Background(), ds).Replicate {
		snap = "-R " + snap
	}
	if err := sh("zfs send " + snap + " > /dev/null"); err != nil {
		return nil, nil, err
	}
	size, err := sendSize(snap)
	if err != nil {
		return nil, nil, err
	}
	for i := range runs {
		b, err := timedCopy(snap, "", fmt.Sprintf("%s/bare%d", pool, i), size)
		if err != nil {
			return nil, nil, err
		}
		r, err := timedCopy(snap, copyRelay, fmt.Sprintf("%s/relay%d", pool, i), size)
		if err != nil {
			return nil, nil, err
		}
		bares, relays = append(bares, b), append(relays, r)
	}
	fmt.Printf("bare zfs send %s | zfs receive: %d MiB at %s MiB/s; through%s: %s MiB/s\n",
		snap, size>>20, mibps(rates(bares)), copyRelay, mibps(rates(relays)))
	return bares, relays, nil
}

// timedCopy times `zfs send snap` through via into a new dataset, into,
// and destroys that.
func timedCopy(snap, via, into string, size int64) (span, error) {
	t0 := time.Now()
	if err := sh(fmt.Sprintf("zfs send %s%s | zfs receive %s", snap, via, into)); err != nil {
		return span{}, err
	}
	s := span{bytes: size, from: t0, to: time.Now()}
	return s, zfsenv.DestroyDataset(into)
}

func sendSize(snap string) (int64, error) {
	out, err := shOut("zfs send " + snap + " | wc -c")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(out), 10, 64)
}

// report works out the figures, prints them and writes them to out. Each
// move's first sync is a full send (the one before was finalized).
func report(ctx context.Context, brokers []string, ms []*system.Move, reps []zfs.MoveReport, bares, relays []span, trace *cpuTrace, sizeMiB int, writeMiBps float64, out string) error {
	r := migrationResult{SizeMiB: sizeMiB, WriteMiBps: writeMiBps}
	syncs, err := r.throughput(ctx, brokers, ms, reps, bares, relays)
	if err != nil {
		return err
	}
	r.CPU = cpuOf(trace, bares, syncs)
	for i, m := range ms {
		sw := switchOf(m.InstanceMigration, reps)
		fmt.Printf("system: move %d: %d syncs, final delta %d KiB, downtime %d ms in the record (driver %d ms: stop %d, final send %d, start %d; the checksums after the start %d ms; goal <= 250)\n",
			i+1, sw.Syncs, sw.FinalDeltaBytes>>10, sw.DowntimeMS, sw.DriverDowntimeMS, sw.StopMS, sw.FinalSendMS, sw.StartMS, sw.SwitchChecksumMS)
		if i == 0 {
			r.moveSwitch = sw
		}
	}
	r.LoadAverage = cli.LoadAvg()
	return cli.WriteJSON(out, r)
}

// throughput fills in the first syncs' figures against the bare runs'.
// It returns the first syncs' spans.
func (r *migrationResult) throughput(ctx context.Context, brokers []string, ms []*system.Move, reps []zfs.MoveReport, bareRuns, relayRuns []span) ([]span, error) {
	var firsts []span
	var syncs, sends []float64
	for i, m := range ms {
		fs, err := firstSync(ctx, brokers, m.InstanceMigration, reps)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			r.FirstSyncBytes = fs.sync.Bytes
		}
		firsts = append(firsts, fs.span)
		syncs = append(syncs, fs.rate())
		sends = append(sends, float64(fs.sync.Bytes)/fs.sync.Duration.Seconds())
		fmt.Printf("system: move %d: first sync %d MiB in %s from dispatch to end (send alone %s) = %.1f MiB/s\n",
			i+1, fs.sync.Bytes>>20, fs.wall().Round(time.Millisecond), fs.sync.Duration.Round(time.Millisecond), fs.rate()/(1<<20))
	}
	bares := rates(bareRuns)
	bare := cli.Median(bares)
	r.BareMiBps, r.FirstSyncMiBps = bare/(1<<20), cli.Median(syncs)/(1<<20)
	r.BareRunsMiBps, r.FirstSyncsMiBps = roundedMiBps(bares), roundedMiBps(syncs)
	r.ThroughputRatio = round3(cli.Median(syncs) / bare)
	r.SendRatio = round3(cli.Median(sends) / bare)
	r.BestRatio = round3(slices.Max(syncs) / slices.Max(bares))
	relays := rates(relayRuns)
	r.CopyRelayRunsMiBps, r.CopyRelayRatio = roundedMiBps(relays), round3(cli.Median(relays)/bare)
	fmt.Printf("system: first syncs %s MiB/s, bare runs %s MiB/s, copy relays %s MiB/s\n", mibps(syncs), mibps(bares), mibps(relays))
	fmt.Printf("system: throughput ratio %.3f: the first syncs' median %.1f MiB/s against the bare runs' %.1f (send alone %.3f; goal >= 0.9); fastest against fastest %.3f\n",
		r.ThroughputRatio, r.FirstSyncMiBps, r.BareMiBps, r.SendRatio, r.BestRatio)
	fmt.Printf("system: copy relay ratio %.3f: the same send through%s, no cipher, no TCP, against the bare runs\n", r.CopyRelayRatio, copyRelay)
	return firsts, nil
}

// moveSwitch is one move's switch, as its record and the driver's report
// have it.
type moveSwitch struct {
	Syncs            int   `json:"syncs"`
	FinalDeltaBytes  int64 `json:"final_delta_bytes"`
	DowntimeMS       int64 `json:"downtime_ms"`
	DriverDowntimeMS int64 `json:"driver_downtime_ms"`
	// Of the downtime: the final delta's send, the stop and the start;
	// and the content checksums of both sides after the start.
	FinalSendMS      int64 `json:"final_send_ms"`
	StopMS           int64 `json:"stop_ms"`
	StartMS          int64 `json:"start_ms"`
	SwitchChecksumMS int64 `json:"switch_checksum_ms"`
}

func switchOf(m *wire.InstanceMigration, reps []zfs.MoveReport) moveSwitch {
	sw := moveSwitch{Syncs: m.Syncs, DowntimeMS: max(system.Downtime(m), 0)}
	for _, rep := range reps {
		if final, ok := rep.FinalSync(); ok && strings.HasPrefix(rep.Key, m.ID+"#") {
			sw.FinalDeltaBytes, sw.DriverDowntimeMS = rep.FinalDelta, rep.Downtime.Milliseconds()
			sw.FinalSendMS = final.Duration.Milliseconds()
			sw.StopMS, sw.StartMS = rep.StopTime.Milliseconds(), rep.StartTime.Milliseconds()
			sw.SwitchChecksumMS = rep.ChecksumTime.Milliseconds()
		}
	}
	return sw
}

func roundedMiBps(rates []float64) []float64 {
	var out []float64
	for _, r := range rates {
		out = append(out, round3(r/(1<<20)))
	}
	return out
}

// mibps prints rates (bytes per second) in MiB/s, one decimal each.
func mibps(rates []float64) string {
	var s []string
	for _, r := range rates {
		s = append(s, strconv.FormatFloat(r/(1<<20), 'f', 1, 64))
	}
	return strings.Join(s, ", ")
}

// span is one timed copy of the dataset: a bare run, or a first sync
// from its dispatch to its end.
type span struct {
	bytes    int64
	from, to time.Time
}

// spanOf is a copy of bytes that took d.
func spanOf(bytes int64, d time.Duration) span {
	var t time.Time
	return span{bytes: bytes, from: t, to: t.Add(d)}
}

func (s span) wall() time.Duration { return s.to.Sub(s.from) }

// rate is in bytes per second.
func (s span) rate() float64 { return float64(s.bytes) / s.wall().Seconds() }

func rates(spans []span) []float64 {
	var out []float64
	for _, s := range spans {
		out = append(out, s.rate())
	}
	return out
}

// firstSyncOf is a move's first sync: the driver's report of it, and its
// span from dispatch to end as the log has them.
type firstSyncOf struct {
	sync zfs.SyncReport
	span
}

func firstSync(ctx context.Context, brokers []string, m *wire.InstanceMigration, reps []zfs.MoveReport) (firstSyncOf, error) {
	var f firstSyncOf
	found := false
	for _, rep := range reps {
		if !found && strings.HasPrefix(rep.Key, m.ID+"#") && len(rep.Syncs) > 0 {
			f.sync, found = rep.Syncs[0], true
		}
	}
	if !found {
		return f, fmt.Errorf("no sync report of migration %s", m.ID)
	}
	var err error
	f.from, f.to, err = firstSyncTimes(ctx, brokers, m.ID)
	f.bytes = f.sync.Bytes
	return f, err
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// firstSyncTimes are the times of the dispatch of migration id's first
// sync and of its end, as the log has them.
func firstSyncTimes(ctx context.Context, brokers []string, id string) (began, ended time.Time, err error) {
	recs, err := kafka.ReadAll(ctx, kafka.Config{Brokers: brokers}, events.TopicOpcodes)
	if err != nil {
		return began, ended, err
	}
	seq := -1
	for _, rec := range recs {
		switch p, _ := rec.Event.DecodePayload(); v := p.(type) {
		case events.MigrationPhaseDispatched:
			if v.Migration == id && v.Phase == events.PhaseSync && v.Sync == 1 && seq < 0 {
				began, seq = rec.Event.Time, v.Seq
			}
		case events.MigrationPhaseEnded:
			if v.Migration == id && v.Seq == seq && ended.IsZero() {
				ended = rec.Event.Time
			}
		}
	}
	if began.IsZero() || ended.IsZero() {
		return began, ended, fmt.Errorf("the first sync of %s is not in the log", id)
	}
	return began, ended, nil
}

func shOut(cmd string) (string, error) {
	out, err := exec.Command("sh", "-c", cmd).Output()
	if err != nil {
		return "", fmt.Errorf("%s: %v", cmd, err)
	}
	return string(out), nil
}
