package progress_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/drovehq/drove/gateway/progress"
	"github.com/drovehq/drove/gateway/wire"
)

// TestMigrationFold: a migration's watch lines in, its steps out, and the
// step the last line changed.
func TestMigrationFold(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	n := func(v int64) *int64 { return &v }
	started := at(-2)
	prog := func(s, i int, phase string, cur, total int64) wire.MigrationLine {
		return wire.MigrationLine{Type: "progress", Migration: "m", Index: i, Phase: phase, Time: at(s), Current: n(cur), Total: n(total), Rate: 100, ETA: 3000}
	}
	end := func(s, i int, phase, state string) wire.MigrationLine {
		return wire.MigrationLine{Type: "end", Migration: "m", Index: i, Phase: phase, State: state, Time: at(s)}
	}
	withStarted := prog(1, 0, "begin", 0, 1)
	withStarted.Started = &started
	failed := end(9, 1, "sync", "failed")
	failed.Error = "disk full"
	noted := prog(4, 1, "sync", 30, 0)
	noted.Message = "total grew"
	for _, tc := range []struct {
		name  string
		lines []wire.MigrationLine
		steps []wire.MigrationStep // every step after the lines
		ended bool
	}{{
		name:  "a step starts when its first line came, or when the line says",
		lines: []wire.MigrationLine{withStarted, prog(3, 1, "sync", 25, 100)},
		steps: []wire.MigrationStep{
			{Index: 0, Phase: "begin", Label: "making a reservation", State: "running", Total: 1, Rate: 100, ETA: 3000, Started: started},
			{Index: 1, Phase: "sync", Label: "synchronizing filesystems", State: "running", Current: 25, Total: 100, Percent: 25, Rate: 100, ETA: 3000, Started: at(3)}},
	}, {
		name:  "a line with no total keeps the bytes and takes its message",
		lines: []wire.MigrationLine{prog(3, 1, "sync", 25, 100), noted},
		steps: []wire.MigrationStep{{Index: 1, Phase: "sync", Label: "synchronizing filesystems", State: "running", Current: 25, Total: 100, Percent: 25,
			Rate: 100, ETA: 3000, Started: at(3), Message: "total grew"}},
	}, {
		name:  "a step short of its end never shows 100",
		lines: []wire.MigrationLine{prog(3, 1, "sync", 120, 100)},
		steps: []wire.MigrationStep{{Index: 1, Phase: "sync", Label: "synchronizing filesystems", State: "running", Current: 120, Total: 100, Percent: 99.9,
			Rate: 100, ETA: 3000, Started: at(3)}},
	}, {
		name:  "a success fills the step and clears its estimate",
		lines: []wire.MigrationLine{prog(3, 1, "sync", 25, 100), end(8, 1, "sync", "successful")},
		steps: []wire.MigrationStep{{Index: 1, Phase: "sync", Label: "synchronizing filesystems", State: "successful", Current: 100, Total: 100, Percent: 100,
			Started: at(3), Ended: ptr(at(8))}},
		ended: true,
	}, {
		name:  "a failure keeps the bytes and says why",
		lines: []wire.MigrationLine{prog(3, 1, "sync", 25, 100), failed},
		steps: []wire.MigrationStep{{Index: 1, Phase: "sync", Label: "synchronizing filesystems", State: "failed", Current: 25, Total: 100, Percent: 25,
			Started: at(3), Ended: ptr(at(9)), Message: "disk full"}},
		ended: true,
	}, {
		name:  "a progress line after an end: the stream runs again",
		lines: []wire.MigrationLine{end(2, 0, "pause", "paused"), prog(5, 1, "switch", 0, 0)},
		steps: []wire.MigrationStep{
			{Index: 0, Phase: "pause", Label: "pausing", State: "paused", Started: at(2), Ended: ptr(at(2))},
			{Index: 1, Phase: "switch", Label: "switching instance", State: "running", Rate: 100, ETA: 3000, Started: at(5)}},
	}, {
		name:  "a phase without a label is named as it is",
		lines: []wire.MigrationLine{prog(1, 0, "warmup", 0, 0)},
		steps: []wire.MigrationStep{{Index: 0, Phase: "warmup", Label: "warmup", State: "running", Rate: 100, ETA: 3000, Started: at(1)}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var m progress.Migration
			var last *wire.MigrationStep
			for _, l := range tc.lines {
				last = m.Apply(l)
			}
			var got []wire.MigrationStep
			for _, s := range m.Steps {
				got = append(got, *s)
			}
			if !reflect.DeepEqual(got, tc.steps) {
				t.Errorf("steps:\n got %+v\nwant %+v", got, tc.steps)
			}
			if m.Ended != tc.ended || m.Migration != "m" {
				t.Errorf("ended %v, migration %q", m.Ended, m.Migration)
			}
			if want := tc.lines[len(tc.lines)-1].Index; last == nil || last.Index != want {
				t.Errorf("the last line changed %+v, want step %d", last, want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
