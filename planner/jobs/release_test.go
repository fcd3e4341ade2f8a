package jobs

import (
	"maps"
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
)

// Ganeti's dependency semantics, each way a dependency can stand when the
// job before it has ended: a job runs once every dependency ended in a
// status it accepts (any, when it lists none), and is cancelled once one
// ended in a status it does not, since it can never run.
func TestDependencyRules(t *testing.T) {
	t.Parallel()
	success, errorOnly := []events.JobStatus{events.JobSuccess}, []events.JobStatus{events.JobError}
	for _, c := range []struct {
		name     string
		accepts  []events.JobStatus
		first    events.JobStatus // how job 0 ends ("": it has not)
		released bool
		cancel   string // part of job 1's cancellation reason
	}{
		{"success accepted, ended success", success, events.JobSuccess, true, ""},
		{"success accepted, ended error", success, events.JobError, false, "dependency job 0 ended error"},
		{"success accepted, ended canceled", success, events.JobCanceled, false, "dependency job 0 ended canceled"},
		{"any end accepted, ended error", nil, events.JobError, true, ""},
		{"any end accepted, ended canceled", nil, events.JobCanceled, true, ""},
		{"only error accepted, ended error", errorOnly, events.JobError, true, ""},
		{"only error accepted, ended success", errorOnly, events.JobSuccess, false, "dependency job 0 ended success"},
		{"not ended yet: wait", success, "", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			w.env.Options.MaxMovesPerNode = 5
			d := w.evacuate("r1", 0, n1, planned(0, nil, migrate("a", "n1", "n2")),
				planned(1, after(-1, c.accepts...), migrate("b", "n1", "n3")))
			if got := released(d); !sameInts(got, []int{0}) {
				t.Fatalf("first pass released %v, want job 0 alone (job 1 waits for it)", got)
			}
			if c.first != "" {
				d = w.end("r1", 0, 0, c.first, "it ended so")
			} else {
				d = Decide(w.env, w.st, "r1")
			}
			if got := released(d); sameInts(got, []int{1}) != c.released {
				t.Errorf("released %v, want job 1 released %t", got, c.released)
			}
			reason, cancelled := cancelledJobs(d)[1]
			if cancelled != (c.cancel != "") || !strings.Contains(reason, c.cancel) {
				t.Errorf("job 1 cancelled %t (%q), want %t (%q)", cancelled, reason, c.cancel != "", c.cancel)
			}
		})
	}
}

// A cancellation cascades through the plan in one pass: a job that can
// never run is cancelled, which cancels the jobs that needed its success,
// while a job that accepts any end of a cancelled one runs.
func TestCancellationCascades(t *testing.T) {
	t.Parallel()
	w := newWorld()
	success := []events.JobStatus{events.JobSuccess}
	w.evacuate("r1", 0, n1,
		planned(0, nil, migrate("a", "n1", "n2")),
		planned(1, after(-1, success...), migrate("b", "n1", "n3")),
		planned(2, after(-1, success...), migrate("c", "n1", "n3")),
		planned(3, after(-1), migrate("d", "n1", "n2")),
		planned(4, after(-4, success...), migrate("e", "n1", "n2")))
	d := w.end("r1", 0, 0, events.JobError, "disk gone")
	want := map[int]string{1: "dependency job 0 ended error", 2: "dependency job 1 ended canceled", 4: "dependency job 0 ended error"}
	if got := cancelledJobs(d); !maps.Equal(got, want) {
		t.Fatalf("cancelled %v, want %v", got, want)
	}
	if got := released(d); !sameInts(got, []int{3}) {
		t.Fatalf("released %v, want job 3 (it accepts any end of job 2)", got)
	}
	if e := endedJobs(d)[0]; e.Status != events.JobError || e.Error != "disk gone" {
		t.Fatalf("job 0 ended %+v, want error, disk gone", e)
	}
	// A cancelled job's cause is the end that doomed it: the log explains
	// each cancellation by the event before it.
	for _, e := range d.Events {
		if e.Type == events.TypeJobCancelled && e.CausationID == "" {
			t.Errorf("a cancellation names no cause")
		}
	}
}

// The per-node limit: at most that many jobs send from one node at once,
// the request's own max_moves_per_node over the service's, counted across
// requests; the jobs of other nodes are not held back by it.
func TestPerNodeLimit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		service  int // Options.MaxMovesPerNode
		request  int // the request's own, 0: none
		running  int // jobs another request already runs from n1
		want     []int
		clusterN int
	}{
		{"the service's 2", 2, 0, 0, []int{0, 1, 4}, 10},
		{"the request's 1 over the service's 2", 2, 1, 0, []int{0, 4}, 10},
		{"the request's 3 over the service's 2", 2, 3, 0, []int{0, 1, 2, 4}, 10},
		{"another request's move counts", 2, 0, 1, []int{0, 4}, 10},
		{"the node's slots taken: only the other node's job", 2, 0, 2, []int{4}, 10},
		{"the cluster limit caps first", 2, 0, 0, []int{0, 1}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			w.env.Options.MaxMovesPerNode, w.env.MaxRunningMoves = c.service, c.clusterN
			if c.running > 0 {
				var other []events.Job
				for i := range c.running {
					other = append(other, planned(i, nil, migrate("o"+string(rune('a'+i)), "n1", "n5")))
				}
				w.env.Options.MaxMovesPerNode = c.running
				if got := released(w.evacuate("r0", 0, []string{"n9"}, other...)); len(got) != c.running {
					t.Fatalf("the other request released %v", got)
				}
				w.env.Options.MaxMovesPerNode = c.service
			}
			d := w.evacuate("r1", c.request, []string{"n1", "n2"},
				planned(0, nil, migrate("a", "n1", "n3")), planned(1, nil, migrate("b", "n1", "n3")),
				planned(2, nil, migrate("c", "n1", "n3")), planned(3, nil, migrate("d", "n1", "n3")),
				planned(4, nil, migrate("e", "n2", "n3")))
			if got := released(d); !sameInts(got, c.want) {
				t.Fatalf("released %v, want %v", got, c.want)
			}
		})
	}
}

// The cluster limit holds across requests: a second request waits for
// the first's moves, and a slot freed by an end goes to the oldest
// request with a ready job once the service's loop asks it.
func TestClusterLimitAcrossRequests(t *testing.T) {
	t.Parallel()
	w := newWorld()
	w.env.MaxRunningMoves = 2
	w.env.Options.MaxMovesPerNode = 5
	if got := released(w.evacuate("r1", 0, n1, planned(0, nil, migrate("a", "n1", "n3")),
		planned(1, nil, migrate("b", "n1", "n3")), planned(2, nil, migrate("c", "n1", "n3")))); !sameInts(got, []int{0, 1}) {
		t.Fatalf("r1 released %v, want jobs 0 and 1", got)
	}
	if got := released(w.evacuate("r2", 0, []string{"n2"}, planned(0, nil, migrate("x", "n2", "n3")))); len(got) != 0 {
		t.Fatalf("r2 released %v with the cluster full", got)
	}
	d := w.end("r1", 0, 0, events.JobSuccess, "")
	if got := released(d); !sameInts(got, []int{2}) {
		t.Fatalf("after an end r1 released %v, want its job 2", got)
	}
	if got := released(Decide(w.env, w.st, "r2")); len(got) != 0 {
		t.Fatalf("r2 released %v; the slot went to r1", got)
	}
	w.end("r1", 1, 0, events.JobSuccess, "")
	if got := released(Decide(w.env, w.st, "r2")); !sameInts(got, []int{0}) {
		t.Fatalf("r2 released %v after r1's job 1 ended, want its job 0", got)
	}
}

// Cancelling a request, at each point of its life: before its plan it is
// rejected; its unreleased jobs are cancelled at once; its running
// opcodes are asked to stop, once, and their jobs end canceled when the
// executors say so; then it finishes cancelled.
func TestCancelARequest(t *testing.T) {
	t.Parallel()
	t.Run("before its plan", func(t *testing.T) {
		t.Parallel()
		w := newWorld()
		w.read(events.EvacuationRequested{Request: "r1", Nodes: n1, Mode: events.EvacAll})
		w.read(events.RequestCancelled{Request: "r1"})
		d := Decide(w.env, w.st, "r1")
		rej, err := events.As[events.RequestRejected](d.Events[0])
		if err != nil || len(d.Events) != 1 || d.Outcome != "rejected" || rej.Reason != "cancelled before it was planned" {
			t.Fatalf("decided %v (%+v), outcome %q; want rejected, cancelled before it was planned", types(d), rej, d.Outcome)
		}
	})
	t.Run("while it runs", func(t *testing.T) {
		t.Parallel()
		w := newWorld()
		w.env.Options.MaxMovesPerNode = 1
		w.evacuate("r1", 0, n1, planned(0, nil, migrate("a", "n1", "n2"), migrate("a", "n2", "n3")),
			planned(1, nil, migrate("b", "n1", "n3")), planned(2, after(-2), migrate("c", "n1", "n3")))
		cancel := events.RequestCancelled{Request: "r1"}
		w.apply(events.New(cancel, events.WithReason(events.Reason{Actor: "operator:bob", Why: "wrong rack"})), cancel)
		d := Decide(w.env, w.st, "r1")
		if got := cancelledJobs(d); !maps.Equal(got, map[int]string{1: "request cancelled", 2: "request cancelled"}) {
			t.Fatalf("cancelled %v, want jobs 1 and 2", got)
		}
		var stop []events.OpcodeCancelled
		for _, e := range d.Events {
			if p, err := events.As[events.OpcodeCancelled](e); err == nil {
				stop = append(stop, p)
			}
		}
		if len(stop) != 1 || stop[0].Job != 0 || stop[0].Node != "n1" || !strings.Contains(stop[0].Reason, "operator:bob: wrong rack") {
			t.Fatalf("asked to stop %+v, want job 0's opcode on n1, saying who cancelled and why", stop)
		}
		if d := Decide(w.env, w.st, "r1"); len(d.Events) != 0 {
			t.Fatalf("a second pass decided %v: the stop is asked once", types(d))
		}
		d = w.end("r1", 0, 0, events.JobCanceled, "stopped")
		if e := endedJobs(d)[0]; e.Status != events.JobCanceled || len(dispatches(d)) != 0 {
			t.Fatalf("after the executor stopped: ended %+v, dispatched %v; want canceled, nothing more", e, dispatches(d))
		}
		fin := finished(t, d)
		if d.Outcome != "cancelled" || len(fin.Moved) != 0 || len(fin.Failed) != 3 {
			t.Fatalf("outcome %q, finished %+v; want cancelled, all three failed", d.Outcome, fin)
		}
	})
	t.Run("between two opcodes of a job", func(t *testing.T) {
		t.Parallel()
		w := newWorld()
		w.evacuate("r1", 0, n1, planned(0, nil, migrate("a", "n1", "n2"), migrate("a", "n2", "n3")))
		w.read(events.RequestCancelled{Request: "r1"})
		Decide(w.env, w.st, "r1") // asks the running opcode to stop
		d := w.end("r1", 0, 0, events.JobSuccess, "")
		e := endedJobs(d)[0]
		if e.Status != events.JobCanceled || e.Error != "request cancelled" || len(dispatches(d)) != 0 {
			t.Fatalf("ended %+v, dispatched %v; want job 0 canceled before its second opcode", e, dispatches(d))
		}
	})
}

// A job with several dependencies runs once the last of them has ended as
// it accepts, and is cancelled as soon as one cannot be met.
func TestSeveralDependencies(t *testing.T) {
	t.Parallel()
	deps := []events.Dependency{{Job: -2, Statuses: []events.JobStatus{events.JobSuccess}}, {Job: -1}}
	for _, c := range []struct {
		name     string
		first    events.JobStatus
		released []int
		cancel   bool
	}{
		{"the first succeeded, the second failed: runs", events.JobSuccess, []int{2}, false},
		{"the first failed: cancelled at once", events.JobError, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			w.env.Options.MaxMovesPerNode = 5
			w.evacuate("r1", 0, n1, planned(0, nil, migrate("a", "n1", "n2")), planned(1, nil, migrate("b", "n1", "n3")),
				planned(2, deps, migrate("c", "n1", "n3")))
			d := w.end("r1", 0, 0, c.first, "")
			if _, cancelled := cancelledJobs(d)[2]; cancelled != c.cancel || len(released(d)) != 0 {
				t.Fatalf("after job 0 ended %s: released %v, cancelled %v", c.first, released(d), cancelledJobs(d))
			}
			if d = w.end("r1", 1, 0, events.JobError, "no"); !sameInts(released(d), c.released) {
				t.Fatalf("after job 1 ended: released %v, want %v", released(d), c.released)
			}
		})
	}
}
