package projector

import (
	"testing"
	"time"

	"github.com/drovehq/drove/events"
)

// TestCoalesceMergesRuns checks that coalescing happens at all, and where
// runs end; TestCoalescingChangesNothing checks, against Postgres, that it
// changes no table.
func TestCoalesceMergesRuns(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	started := at(0)
	progress := func(s int, err string) events.Payload {
		return events.Progress{Request: "r", Instance: "vm1", Node: "n1", Phase: events.PhaseSync,
			State: events.ProgressRunning, Current: int64(s), Total: 10, Started: started, Error: err}
	}
	type ev struct {
		p events.Payload
		t time.Time
	}
	log := []ev{
		{progress(1, ""), at(1)},
		{progress(2, "disk slow"), at(2)},
		{events.MoveStatusReported{Request: "r", Instance: "vm1", Node: "n1", Status: events.StatusMigrationSource}, at(2)},
		{progress(4, ""), at(4)},
		{progress(3, "late"), at(3)}, // older than the run's latest: its error never applies
		{events.MoveStatusReported{Request: "r", Instance: "vm1", Node: "n1", Status: events.StatusUp}, at(5)},
		{events.End{Request: "r", Instance: "vm1", Node: "n1", Phase: events.PhaseSync, State: events.EndPaused}, at(6)},
		{progress(7, ""), at(7)},
		{progress(8, ""), at(8)},
	}
	var all []stmt
	for _, e := range log {
		sts, err := effects(events.New(e.p, events.WithTime(e.t)), e.p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, sts...)
	}
	got := coalesce(all)
	var kinds []string
	for _, s := range got {
		switch {
		case s.sql == q("move_progress"):
			kinds = append(kinds, "progress")
		case s.sql == q("sync_seen"):
			kinds = append(kinds, "sync")
		case s.sql == q("move_status"):
			kinds = append(kinds, "status")
		case s.sql == q("move_end"):
			kinds = append(kinds, "end")
		}
	}
	// One progress before the End and one after; one sync row (its
	// bytes the greatest), one status.
	want := []string{"progress", "sync", "status", "end", "progress"}
	if len(kinds) != len(want) {
		t.Fatalf("coalesced to %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("coalesced to %v, want %v", kinds, want)
		}
	}
	first := got[0].vals.(progressRow)
	if first.current != 4 || !first.t.Equal(at(4)) || first.err != "disk slow" || !first.errT.Equal(at(2)) {
		t.Errorf("first run merged to %+v: want event 4's fields, with event 2's error and time", first)
	}
	// Sent as two statements, each with its parameters in its tuple: the
	// error at its event's time, then the run's last fields without it.
	split := first.stmts()
	if len(split) != 2 {
		t.Fatalf("first run sent as %d statements, want 2", len(split))
	}
	if e, r := split[0].vals.(progressRow), split[1].vals.(progressRow); !e.t.Equal(at(2)) || e.err != "disk slow" ||
		!r.t.Equal(at(4)) || r.err != "" || r.current != 4 {
		t.Errorf("first run sent as %+v then %+v: want the error at event 2's time, then event 4 without it", e, r)
	}
	if s := got[1].vals.(syncRow); s.bytes != 10 {
		t.Errorf("sync row %+v, want the greatest bytes", s)
	}
	if s := got[2].vals.(statusRow); s.status != string(events.StatusUp) {
		t.Errorf("status %+v, want the latest", s)
	}
	if last := got[4].vals.(progressRow); last.current != 8 || last.err != "" {
		t.Errorf("second run merged to %+v, want event 8's fields and no error", last)
	}
}
