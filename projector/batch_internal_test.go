package projector

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestMultiRowForms(t *testing.T) {
	for _, name := range []string{"opcode_dispatched", "move_dispatched", "instance_declared", "job_ended",
		"move_status", "migration_recorded", "sync_seen", "move_progress"} {
		m := multiRows[name]
		if m == nil {
			t.Errorf("%s cannot be merged", name)
			continue
		}
		if got, one := strings.Count(m.sql[4], "$"), strings.Count(stripComments(q(name)), "$"); got != 4*one {
			t.Errorf("%s: %d parameters in 4 rows, want 4 × %d", name, got, one)
		}
		if !strings.Contains(m.sql[2], "$"+strconv.Itoa(2*m.params)) || strings.Contains(m.sql[2], "$"+strconv.Itoa(2*m.params+1)) {
			t.Errorf("%s: 2 rows do not number their parameters 1..%d:\n%s", name, 2*m.params, m.sql[2])
		}
	}
	// No tuple at all: one statement per row.
	for _, name := range []string{"plan_jobs"} {
		if multiRows[name] != nil {
			t.Errorf("%s merged", name)
		}
	}
}

// Statements on one row keep their order across levels; a statement with
// no footprint comes after everything before it and before everything
// after it; statements on different rows share a level.
func TestLevels(t *testing.T) {
	a1 := st("move_started", "a", "r", 0, 0, nil)
	b1 := st("move_started", "b", "r", 0, 1, nil)
	a2 := st("move_ended", "a", "r", 0, 0, nil, "", "")
	plan := st("plan_jobs", "r", "[]")
	c1 := st("move_started", "c", "r", 0, 2, nil)
	a3 := st("move_started", "a", "r", 0, 0, nil)
	got := levels([]stmt{a1, b1, a2, plan, c1, a3})
	names := func(l []stmt) []string {
		var out []string
		for _, s := range l {
			out = append(out, s.name+":"+s.args[0].(string))
		}
		return out
	}
	want := [][]string{
		{"move_started:a", "move_started:b"},
		{"move_ended:a"},
		{"plan_jobs:r"},
		{"move_started:c", "move_started:a"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d levels, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if !slices.Equal(names(got[i]), want[i]) {
			t.Errorf("level %d: %v, want %v", i, names(got[i]), want[i])
		}
	}
}
