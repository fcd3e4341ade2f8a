package jobs

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/inventory"
)

// midway: r1's plan of four jobs on one node (one at a time): job 0
// succeeded, job 1 failed, job 2 runs, job 3 waits for it.
func midway(t *testing.T) *world {
	t.Helper()
	w := newWorld()
	w.env.Options.MaxMovesPerNode = 1
	w.evacuate("r1", 0, n1, planned(0, nil, migrate("a", "n1", "n2")), planned(1, nil, migrate("b", "n1", "n2")),
		planned(2, nil, migrate("c", "n1", "n2")), planned(3, nil, migrate("d", "n1", "n2")))
	w.end("r1", 0, 0, events.JobSuccess, "")
	w.end("r1", 1, 0, events.JobError, "no")
	if got := w.st.CountJobs()["running"]; got != 1 {
		t.Fatalf("%v running, want job 2", got)
	}
	return w
}

// The planner's own decisions, read back from the log, change nothing: a
// pass after them decides nothing.
func TestReadingBackDecisionsIsANoOp(t *testing.T) {
	t.Parallel()
	w := newWorld()
	var taken []events.Envelope
	d := w.evacuate("r1", 1, n1, planned(0, nil, migrate("a", "n1", "n2")), planned(1, nil, migrate("b", "n1", "n3")))
	taken = append(taken, d.Events...)
	taken = append(taken, w.end("r1", 0, 0, events.JobSuccess, "").Events...)
	before := w.st.CountJobs()
	for _, e := range taken { // as the log returns them
		b, err := events.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		env, p, err := events.DecodeWithPayload(b)
		if err != nil {
			t.Fatal(err)
		}
		w.apply(env, p)
	}
	if got := w.st.CountJobs(); !maps.Equal(got, before) {
		t.Fatalf("reading back changed the jobs: %v, was %v", got, before)
	}
	if d := Decide(w.env, w.st, "r1"); len(d.Events) != 0 {
		t.Fatalf("after reading back a pass decided %v", types(d))
	}
}

// What the fold says of a request under way: the instances its jobs hold
// (until each has a fate), the nodes it empties, its jobs by state.
func TestTheFoldOfARequestUnderWay(t *testing.T) {
	t.Parallel()
	w := midway(t)
	if got := w.st.BusyInstances(); !maps.Equal(got, map[string]string{"c": "r1", "d": "r1"}) {
		t.Errorf("busy %v, want c and d held by r1", got)
	}
	if got := w.st.Emptying("n1"); got != "r1" {
		t.Errorf("Emptying(n1) = %q, want r1", got)
	}
	if got := w.st.Emptying("n2"); got != "" {
		t.Errorf("Emptying(n2) = %q, want none", got)
	}
	want := map[string]float64{"succeeded": 1, "failed": 1, "running": 1, "pending": 1}
	if got := w.st.CountJobs(); !maps.Equal(got, want) {
		t.Errorf("CountJobs = %v, want %v", got, want)
	}
	if n, active := w.st.Counts(); n != 1 || active != 1 {
		t.Errorf("Counts = %d, %d; want 1, 1", n, active)
	}
	w.read(events.RequestCancelled{Request: "r1"})
	Decide(w.env, w.st, "r1")
	want = map[string]float64{"succeeded": 1, "failed": 1, "running": 1, "cancelled": 1}
	if got := w.st.CountJobs(); !maps.Equal(got, want) {
		t.Errorf("after cancel CountJobs = %v, want %v", got, want)
	}
}

// A closed request leaves the fold at once; its events read later make a
// stub, which DropStubs clears once the log is read to its end.
func TestClosedRequestsLeaveTheFold(t *testing.T) {
	t.Parallel()
	w := midway(t)
	w.read(events.RequestCancelled{Request: "r1"})
	Decide(w.env, w.st, "r1")
	d := w.end("r1", 2, 0, events.JobCanceled, "stopped")
	if d.Outcome != "cancelled" || len(w.st.Order()) != 0 || w.st.Emptying("n1") != "" || len(w.st.BusyInstances()) != 0 {
		t.Fatalf("outcome %q, order %v; want the request gone", d.Outcome, w.st.Order())
	}
	w.read(events.OpcodeStarted{Request: "r1", Job: 2, Index: 0, Node: "n1"}) // read back late
	if got := w.st.Order(); !slices.Equal(got, []string{"r1"}) || w.st.Active("r1") {
		t.Fatalf("order %v after a late event, want a stub of r1, inactive", got)
	}
	if d := Decide(w.env, w.st, "r1"); len(d.Events) != 0 {
		t.Fatalf("a stub decided %v", types(d))
	}
	w.st.DropStubs()
	if got := w.st.Order(); len(got) != 0 {
		t.Fatalf("order %v after DropStubs", got)
	}
}

// A snapshot of the fold restores a state the queue goes on from as if it
// had never stopped: the same next decisions.
func TestSnapshotRestoresTheFold(t *testing.T) {
	t.Parallel()
	w := midway(t)
	b, err := json.Marshal(w.st)
	if err != nil {
		t.Fatal(err)
	}
	restored := NewState()
	if err := json.Unmarshal(b, restored); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(restored.CountJobs(), w.st.CountJobs()) || !maps.Equal(restored.BusyInstances(), w.st.BusyInstances()) {
		t.Fatalf("restored %v %v, want %v %v", restored.CountJobs(), restored.BusyInstances(), w.st.CountJobs(), w.st.BusyInstances())
	}
	other := &world{inv: w.inv, st: restored}
	other.env = w.env
	other.env.Apply = func(e events.Envelope, p events.Payload) { other.apply(e, p) }
	end := events.OpcodeEnded{Request: "r1", Job: 2, Index: 0, Node: "n1", Status: events.JobSuccess}
	env := events.New(end)
	pos := inventory.Unread(env)
	w.st.Apply(env, end, pos)
	restored.Apply(env, end, pos)
	a, z := Decide(w.env, w.st, "r1"), Decide(other.env, restored, "r1")
	if !slices.Equal(types(a), types(z)) || !sameInts(released(a), released(z)) || a.Outcome != z.Outcome {
		t.Fatalf("the running fold decided %v %v, the restored one %v %v", types(a), released(a), types(z), released(z))
	}
	if !sameInts(released(z), []int{3}) {
		t.Fatalf("the restored fold released %v, want job 3", released(z))
	}
}

// A new plan counts the room other active requests' moves still need,
// and per-instance migrations' (ReserveMigrations), until each has ended.
func TestReserveInFlight(t *testing.T) {
	t.Parallel()
	w := cluster()
	w.read(events.EvacuationRequested{Request: "r1", Nodes: n1, Mode: events.EvacAll})
	Decide(w.env, w.st, "r1") // a to n3, running
	free := func() int64 {
		c := w.inv.Cluster()
		w.st.ReserveInFlight(w.inv, c)
		return c.Nodes[c.NodeIndex("n3")].FreeMemory
	}
	full := w.inv.Cluster().Nodes[w.inv.Cluster().NodeIndex("n3")].FreeMemory
	if got := free(); got != full-6144 {
		t.Fatalf("n3 has %d MiB free with a's move in flight, want %d", got, full-6144)
	}
	w.end("r1", 0, 0, events.JobSuccess, "")
	if got := free(); got != full {
		t.Fatalf("n3 has %d MiB free after the move ended, want %d (the inventory counts a there once placed)", got, full)
	}
	c := w.inv.Cluster()
	ReserveMigrations(w.inv, c, map[string][]string{"b": {"n3"}, "gone": {"n3"}})
	if got := c.Nodes[c.NodeIndex("n3")].FreeMemory; got != full-6144 {
		t.Fatalf("n3 has %d MiB free with b migrating there, want %d", got, full-6144)
	}
}
