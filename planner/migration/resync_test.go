package migration_test

import (
	"math"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/migration"
)

// The estimate's rehearsal follows the coordinator's rule: a sync is
// judged by what it sent, so a full send of 1 GiB is followed by one
// re-sync of what it dirtied, and the final delta is what that re-sync's
// time dirtied, not the full send's.
func TestRehearseJudgesEachSyncByWhatItSent(t *testing.T) {
	const MiB = 1 << 20
	s := events.DefaultSettings()
	cases := []struct {
		name              string
		data, link, dirty float64
		syncs             int
		finalDelta        float64
	}{
		{"1 GiB, 100 MiB/s, 1 MiB/s dirty", 1024 * MiB, 100 * MiB, 1 * MiB, 2, 1 * MiB * (10.24 * MiB / (100 * MiB))},
		{"under the limit at once", 10 * MiB, 100 * MiB, 1 * MiB, 1, 0.1 * MiB},
		{"5 MiB/s dirty over 300 MiB/s", 1024 * MiB, 300 * MiB, 5 * MiB, 2, 5 * MiB * (1024.0 * 5 / 300 / 300)},
	}
	for _, c := range cases {
		sizes, final := migration.Rehearse(c.data, c.link, c.dirty, s)
		if len(sizes) != c.syncs || math.Abs(final-c.finalDelta) > 1 {
			t.Errorf("%s: %d syncs %v, final delta %.0f; want %d syncs, %.0f", c.name, len(sizes), sizes, final, c.syncs, c.finalDelta)
		}
	}
}

// An instance dirtying faster than the link stops where the rule says
// (the size stopped shrinking), not never.
func TestRehearseStopsWhenTheDeltaDoesNotShrink(t *testing.T) {
	s := events.DefaultSettings()
	sizes, _ := migration.Rehearse(1<<30, 100<<20, 200<<20, s)
	if len(sizes) != s.ResyncShrinkWindow+1 {
		t.Fatalf("%d syncs %v, want %d (the shrink window)", len(sizes), sizes, s.ResyncShrinkWindow+1)
	}
	s.ResyncMaxSyncs, s.ResyncShrinkWindow = 1<<30, 0
	if sizes, _ := migration.Rehearse(1<<30, 100<<20, 200<<20, s); len(sizes) > 1000 {
		t.Fatalf("%d syncs with no rule to stop them", len(sizes))
	}
}
