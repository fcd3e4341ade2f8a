package sim

import (
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/drivertest"
)

func phase(seq int, name string, sync int) executor.MigrationPhase {
	return executor.MigrationPhase{Migration: "m1", Seq: seq, Phase: name, Sync: sync, Instance: "vm1",
		Size: events.Size{MemoryMiB: 512, DisksMiB: []int64{1024}}, Storage: events.StorageZFSLocal,
		RunState: events.RunRunning, Source: "n1", Target: "n2"}
}

func TestMigratorPhasesShrinkAndSwitch(t *testing.T) {
	d := newSim(t, Config{})
	var sizes []int64
	for seq, p := range []executor.MigrationPhase{phase(0, "begin", 0), phase(1, "sync", 1), phase(2, "sync", 2),
		phase(3, "sync", 3), phase(4, "switch", 4)} {
		var last executor.Progress
		res, err := d.Phase(t.Context(), p, func(pr executor.Progress) { last = pr })
		if err != nil {
			t.Fatalf("phase %d %s: %v", seq, p.Phase, err)
		}
		if last.Current != last.Total {
			t.Fatalf("phase %s ended at %d of %d", p.Phase, last.Current, last.Total)
		}
		if p.Phase == "sync" {
			sizes = append(sizes, res.Bytes)
		}
		if p.Phase == "switch" && res.Downtime <= 0 {
			t.Fatalf("switch of a running instance without downtime: %+v", res)
		}
	}
	if sizes[0] != 1<<30 || !(sizes[1] < sizes[0] && sizes[2] < sizes[1]) {
		t.Fatalf("sync sizes %v: want the whole disk, then shrinking incrementals", sizes)
	}
	if p, _, _ := d.Locate(t.Context(), "vm1"); p != "n2" {
		t.Fatalf("after the switch vm1 is on %s", p)
	}
	// Run again after a crash: the same result, nothing sent twice.
	again, err := d.Phase(t.Context(), phase(4, "switch", 4), func(executor.Progress) {})
	if err != nil || again.Downtime <= 0 {
		t.Fatalf("switch again: %+v %v", again, err)
	}
	if _, err := d.Phase(t.Context(), phase(5, "rollback", 0), func(executor.Progress) {}); err != nil {
		t.Fatal(err)
	}
	if p, _, _ := d.Locate(t.Context(), "vm1"); p != "n1" {
		t.Fatalf("after the rollback vm1 is on %s", p)
	}
}

func TestMigratorFollowsTheCurrentRate(t *testing.T) {
	took := func(rate int64) time.Duration {
		clock := InstantClock()
		d := newSim(t, Config{Clock: clock})
		p := phase(1, "sync", 1)
		p.CurrentRate = func() int64 { return rate }
		start := clock.Now()
		if _, err := d.Phase(t.Context(), p, func(executor.Progress) {}); err != nil {
			t.Fatal(err)
		}
		return clock.Now().Sub(start)
	}
	full, capped := took(0), took(50<<20)
	if capped < 3*full {
		t.Fatalf("a full send took %s uncapped and %s at a quarter of the bandwidth", full, capped)
	}
}

// TestMigrationSuite runs drivertest's migration part against the
// simulator, in instant and in sped-up real time.
func TestMigrationSuite(t *testing.T) {
	all := []events.StorageKind{events.StorageZFSLocal, events.StorageRBD}
	drivertest.RunMigrations(t, all, func(t *testing.T) executor.Migrator { return newSim(t, Config{}) })
	t.Run("fast-clock", func(t *testing.T) {
		drivertest.RunMigrations(t, all, func(t *testing.T) executor.Migrator {
			return newSim(t, Config{Clock: FastClock(2000)})
		})
	})
}
