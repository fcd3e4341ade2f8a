package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
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

// The per-instance migration through the whole system: the embedded
// broker and Postgres, the projector, the planner service (its migration
// coordinator), one executor per node with the ZFS driver and the process
// runtime, and the gateway, driven over HTTP as a user would. The
// instance is a zfs-local dataset of sizeMiB whose process rewrites
// writeMiBps into it; the migration is automatic.

// migrationResult is test/bench/results/zfs-migration.json.
type migrationResult struct {
	// DowntimeMS is the downtime the migration's record reports.
	DowntimeMS int64 `json:"downtime_ms"`
	// ThroughputRatio is the first sync through the whole system (bytes
	// over the time from its dispatch to its end, both in the log)
	// divided by a bare `zfs send | zfs receive` of the same dataset in
	// this run.
	ThroughputRatio float64 `json:"throughput_ratio"`
	// SendRatio is the first sync's send alone (as the driver timed it)
	// divided by the bare run.
	SendRatio        float64 `json:"send_ratio"`
	BareMiBps        float64 `json:"bare_mibps"`
	FirstSyncMiBps   float64 `json:"first_sync_mibps"`
	FirstSyncBytes   int64   `json:"first_sync_bytes"`
	Syncs            int     `json:"syncs"`
	FinalDeltaBytes  int64   `json:"final_delta_bytes"`
	DriverDowntimeMS int64   `json:"driver_downtime_ms"`
	// Of the downtime: the final delta's send, and the content checksums
	// of both sides at the switch.
	FinalSendMS      int64   `json:"final_send_ms"`
	SwitchChecksumMS int64   `json:"switch_checksum_ms"`
	SizeMiB          int     `json:"size_mib"`
	WriteMiBps       float64 `json:"write_mibps"`
	LoadAverage      string  `json:"load_average"`
}

func runSystem(sizeMiB int, writeMiBps float64, out, downtimeOut string, moves int) (err error) {
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
	bare, err := bareRate(demo.Dataset(src, "local-1"), demo.Pools[dst])
	if err != nil {
		return err
	}

	sys, err := system.Start(ctx, tmp, cluster, demo.Driver)
	if err != nil {
		return err
	}
	defer sys.Stop()
	ms, err := sys.MoveBackAndForth(ctx, "local-1", src, dst, moves)
	if err != nil {
		return err
	}
	d := system.Downtimes(ms...)
	system.PrintDowntimes("zfs_offline", d)
	if err := system.WriteDowntime(downtimeOut, "zfs_offline", d); err != nil {
		return err
	}
	mu.Lock()
	reps := append([]zfs.MoveReport(nil), reports...)
	mu.Unlock()
	return report(ctx, sys.Brokers, ms[0].InstanceMigration, reps, bare, sizeMiB, writeMiBps, out)
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

// bareRate times `zfs send | zfs receive` of a snapshot of ds into pool,
// once to warm the caches, then the best of two, in bytes per second.
func bareRate(ds, pool string) (float64, error) {
	snap := ds + "@bare"
	if err := sh("zfs snapshot " + snap); err != nil {
		return 0, err
	}
	defer sh("zfs destroy " + snap)
	if err := sh("zfs send " + snap + " > /dev/null"); err != nil {
		return 0, err
	}
	size, err := sendSize(snap)
	if err != nil {
		return 0, err
	}
	var best time.Duration
	for i := 0; i < 2; i++ {
		t0 := time.Now()
		if err := sh(fmt.Sprintf("zfs send %s | zfs receive %s/bare%d", snap, pool, i)); err != nil {
			return 0, err
		}
		if d := time.Since(t0); best == 0 || d < best {
			best = d
		}
		_ = sh(fmt.Sprintf("zfs destroy -r %s/bare%d", pool, i))
	}
	fmt.Printf("system: bare zfs send | zfs receive: %d MiB in %s (best of 2)\n", size>>20, best.Round(time.Millisecond))
	return float64(size) / best.Seconds(), nil
}

func sendSize(snap string) (int64, error) {
	out, err := shOut("zfs send " + snap + " | wc -c")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(out), 10, 64)
}

// report works out the figures, prints them and writes them to out.
func report(ctx context.Context, brokers []string, m *wire.InstanceMigration, reps []zfs.MoveReport, bare float64, sizeMiB int, writeMiBps float64, out string) error {
	r := migrationResult{SizeMiB: sizeMiB, WriteMiBps: writeMiBps, Syncs: m.Syncs, BareMiBps: bare / (1 << 20)}
	r.DowntimeMS = max(system.Downtime(m), 0)
	var first *zfs.SyncReport
	for _, rep := range reps {
		if !strings.HasPrefix(rep.Key, m.ID+"#") {
			continue
		}
		if first == nil && len(rep.Syncs) > 0 {
			s := rep.Syncs[0]
			first = &s
		}
		if len(rep.Syncs) > 0 && rep.Syncs[len(rep.Syncs)-1].Final {
			r.FinalDeltaBytes, r.DriverDowntimeMS = rep.FinalDelta, rep.Downtime.Milliseconds()
			r.FinalSendMS = rep.Syncs[len(rep.Syncs)-1].Duration.Milliseconds()
			r.SwitchChecksumMS = rep.ChecksumTime.Milliseconds()
		}
	}
	if first == nil {
		return fmt.Errorf("no sync report of migration %s", m.ID)
	}
	wall, err := firstSyncWall(ctx, brokers, m.ID)
	if err != nil {
		return err
	}
	r.FirstSyncBytes = first.Bytes
	r.FirstSyncMiBps = float64(first.Bytes) / wall.Seconds() / (1 << 20)
	r.ThroughputRatio = round3(float64(first.Bytes) / wall.Seconds() / bare)
	r.SendRatio = round3(float64(first.Bytes) / first.Duration.Seconds() / bare)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		r.LoadAverage = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	fmt.Printf("system: first sync %d MiB in %s from dispatch to end (send alone %s) = %.1f MiB/s; bare %.1f MiB/s\n",
		first.Bytes>>20, wall.Round(time.Millisecond), first.Duration.Round(time.Millisecond), r.FirstSyncMiBps, r.BareMiBps)
	fmt.Printf("system: throughput ratio %.3f (send alone %.3f; goal >= 0.9); %d syncs, final delta %d KiB, downtime %d ms in the record (driver %d ms, of which final send %d ms; the checksums after the start %d ms; goal <= 250)\n",
		r.ThroughputRatio, r.SendRatio, r.Syncs, r.FinalDeltaBytes>>10, r.DowntimeMS, r.DriverDowntimeMS, r.FinalSendMS, r.SwitchChecksumMS)
	return cli.WriteJSON(out, r)
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// firstSyncWall is the time from the dispatch of migration id's first
// sync to its end, as the log has them.
func firstSyncWall(ctx context.Context, brokers []string, id string) (time.Duration, error) {
	recs, err := kafka.ReadAll(ctx, kafka.Config{Brokers: brokers}, events.TopicOpcodes)
	if err != nil {
		return 0, err
	}
	var began, ended time.Time
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
		return 0, fmt.Errorf("the first sync of %s is not in the log", id)
	}
	return ended.Sub(began), nil
}

func shOut(cmd string) (string, error) {
	out, err := exec.Command("sh", "-c", cmd).Output()
	if err != nil {
		return "", fmt.Errorf("%s: %v", cmd, err)
	}
	return string(out), nil
}
