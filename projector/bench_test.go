package projector_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	. "github.com/drovehq/drove/projector"
)

// BenchmarkReplay folds a log of b.N events (a realistic mix: mostly
// progress, with the inventory, requests, plans, jobs and opcodes around
// them) from offset zero and reports events per second of fold.
func BenchmarkReplay(b *testing.B) {
	e := newEnvTB(b)
	evs := benchLog(b.N)
	for len(evs) > 0 {
		n := min(1000, len(evs))
		e.append(evs[:n]...)
		evs = evs[n:]
	}
	cfg := e.cfg
	cfg.ReplayWait = -1
	b.ResetTimer()
	rep, err := Replay(e.ctx, cfg, e.pool)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if rep.Events != b.N {
		b.Fatalf("folded %d events, want %d", rep.Events, b.N)
	}
	b.ReportMetric(float64(rep.Events)/rep.FoldDuration.Seconds(), "events/s")
}

// benchLog returns n events: per move, a request, a plan, a release, a
// dispatch, a start, progress events, an end and statuses.
func benchLog(n int) []events.Envelope {
	var out []events.Envelope
	for i := 0; len(out) < n; i++ {
		r := fmt.Sprintf("req-%d", i)
		vm := fmt.Sprintf("vm%d", i%500)
		op := events.Opcode{OpID: events.OpInstanceMigrate, Instance: vm, From: "n1", To: "n2"}
		job := events.Job{Index: 0, Opcodes: []events.Opcode{op}}
		out = append(out,
			ev(events.EvacuationRequested{Request: r, Nodes: []string{"n1"}, Mode: events.EvacAll}, i, r),
			ev(events.PlanComputed{Request: r, Moved: []events.Moved{{Instance: vm, Group: "g", Nodes: []string{"n2"}}},
				Failed: []events.Failed{}, Jobs: []events.Job{job}}, i, r),
			ev(events.JobReleased{Request: r, Job: job}, i, r),
			ev(events.OpcodeDispatched{Request: r, Node: "n1", Opcode: op}, i, r),
			ev(events.OpcodeStarted{Request: r, Node: "n1"}, i, r))
		for k := range 20 {
			out = append(out, ev(events.Progress{Request: r, Instance: vm, Node: "n1", Phase: events.PhaseSync,
				State: events.ProgressRunning, Current: int64(k), Total: 20,
				Started: time.Date(2025, 1, 1, 0, 0, k/5, 0, time.UTC)}, i+k, r))
		}
		out = append(out,
			ev(events.OpcodeEnded{Request: r, Node: "n1", Status: events.JobSuccess}, i+30, r),
			ev(events.MoveStatusReported{Request: r, Instance: vm, Node: "n1", Status: events.StatusDown}, i+30, r),
			ev(events.JobEnded{Request: r, Status: events.JobSuccess}, i+30, r))
	}
	return out[:n]
}
