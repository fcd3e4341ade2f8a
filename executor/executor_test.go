package executor_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/events/retry"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/sim"
)

func TestDispatchRunsAndReportsInOrder(t *testing.T) {
	w := newWorld(t, instance("vm1", events.StorageZFSReplicated, "n1", "n2", 2048, 1024))
	d := newSim(t)
	w.start("n1", d)
	disp := w.dispatch("req-1", 0, 0, "n1", migrate("vm1", "n1", "n2"))

	if got := w.waitEnded("req-1", 0, 0); got.Status != events.JobSuccess || got.Node != "n1" {
		t.Fatalf("OpcodeEnded = %+v, want success on n1", got)
	}
	all := ofRequest(w.read(events.TopicOpcodes), "req-1")
	relays := payloads[events.TargetNotified](all)
	ops := slices.DeleteFunc(all, func(e events.Envelope) bool { return e.Type == events.TypeTargetNotified })
	if types := typesOf(ops); !slices.Equal(types, []string{events.TypeOpcodeDispatched, events.TypeOpcodeStarted, events.TypeOpcodeEnded}) {
		t.Fatalf("drove.opcodes holds %v", types)
	}
	// The target reads only its own partition: the source relays the
	// dispatch (with its start) and the end to it.
	if len(relays) != 2 || relays[0].Node != "n2" || relays[0].Event.ID != disp.ID ||
		relays[1].Node != "n2" || relays[1].Event.Type != events.TypeOpcodeEnded {
		t.Fatalf("relays to the target = %+v, want the dispatch and the end for n2", relays)
	}
	prog := w.read(events.TopicProgress)
	inv := ofRequest(w.read(events.TopicInventory), "req-1")

	// Order on drove.progress (keyed by instance, so one partition):
	// statuses, progress, End, statuses.
	types := typesOf(prog)
	if len(types) < 6 || types[0] != events.TypeMoveStatusReported || types[1] != events.TypeMoveStatusReported ||
		types[len(types)-3] != events.TypeEnd || types[len(types)-1] != events.TypeMoveStatusReported {
		t.Fatalf("drove.progress holds %v", types)
	}
	statuses := payloads[events.MoveStatusReported](prog)
	want := []events.MoveStatusReported{
		{Request: "req-1", Instance: "vm1", Node: "n1", Status: events.StatusMigrationSource},
		{Request: "req-1", Instance: "vm1", Node: "n2", Status: events.StatusMigrationDestination},
		{Request: "req-1", Instance: "vm1", Node: "n1", Status: events.StatusDown},
		{Request: "req-1", Instance: "vm1", Node: "n2", Status: events.StatusUp},
	}
	if !slices.Equal(statuses, want) {
		t.Fatalf("statuses %+v\nwant %+v", statuses, want)
	}
	ps := payloads[events.Progress](prog)
	if len(ps) < 2 {
		t.Fatalf("%d progress events, want several", len(ps))
	}
	for i, p := range ps {
		if p.Request != "req-1" || p.Instance != "vm1" || p.Node != "n1" || p.State != events.ProgressRunning {
			t.Fatalf("progress %d: %+v", i, p)
		}
		if i > 0 && p.Current < ps[i-1].Current {
			t.Fatalf("progress goes backwards: %+v after %+v", p, ps[i-1])
		}
	}
	if last := ps[len(ps)-1]; last.Current != last.Total || last.Total == 0 {
		t.Fatalf("last progress %d/%d, want the whole move", last.Current, last.Total)
	}
	end := payloads[events.End](prog)
	if len(end) != 1 || end[0].State != events.EndSuccessful {
		t.Fatalf("End = %+v", end)
	}
	placed := payloads[events.InstancePlaced](inv)
	wantPlaced := events.InstancePlaced{Instance: "vm1", Group: group, PrimaryNode: "n2", SecondaryNode: "n1",
		PreviousGroup: group, PreviousPrimary: "n1", PreviousSecondary: "n2", Request: "req-1"}
	if len(placed) != 1 || placed[0] != wantPlaced {
		t.Fatalf("InstancePlaced = %+v\nwant %+v", placed, wantPlaced)
	}

	// Every effect is caused by the dispatch, in its request, by this executor.
	for _, e := range append(append(ops[1:], prog...), inv...) {
		if e.CausationID != disp.ID || e.CorrelationID != "req-1" || e.Reason.RequestID != "req-1" ||
			e.Reason.Actor != "executor/n1" || e.Producer != "executor/n1" || !strings.Contains(e.Reason.Why, "operator:alice") {
			t.Fatalf("%s: causation %q correlation %q reason %+v producer %q", e.Type, e.CausationID, e.CorrelationID, e.Reason, e.Producer)
		}
	}
	if p, s, _ := d.Locate(t.Context(), "vm1"); p != "n2" || s != "n1" {
		t.Fatalf("the simulator has vm1 on %s/%s", p, s)
	}
}

func TestTransientFaultsRetryAndSucceed(t *testing.T) {
	w := newWorld(t, instance("vm1", events.StorageZFSReplicated, "n1", "n2", 512, 2048))
	d := newSim(t, sim.Fault{Instance: "vm1", Kind: sim.FaultTransient, Times: 2})
	w.start("n1", d)
	w.dispatch("req-1", 0, 0, "n1", replaceDisks("vm1", "n1", "n3"))
	if got := w.waitEnded("req-1", 0, 0); got.Status != events.JobSuccess {
		t.Fatalf("OpcodeEnded = %+v, want success after retries", got)
	}
	var retries []string
	ps := payloads[events.Progress](w.read(events.TopicProgress))
	for i, p := range ps {
		if strings.Contains(p.Message, "retrying") {
			retries = append(retries, p.Message)
			if p.Error == "" {
				t.Errorf("retry event without the fault: %+v", p)
			}
		}
		if i > 0 && p.Current < ps[i-1].Current {
			t.Fatalf("progress goes backwards across retries: %+v after %+v", p, ps[i-1])
		}
	}
	if len(retries) != 2 || !strings.HasPrefix(retries[0], "retrying (attempt 2/5) after transient fault: ") ||
		!strings.HasPrefix(retries[1], "retrying (attempt 3/5)") {
		t.Fatalf("retry notices %q", retries)
	}
	placed := payloads[events.InstancePlaced](w.read(events.TopicInventory))
	if len(placed) != 1 || placed[0].PrimaryNode != "n1" || placed[0].SecondaryNode != "n3" || placed[0].PreviousSecondary != "n2" {
		t.Fatalf("InstancePlaced = %+v", placed)
	}
	if d.Runs("vm1") != 3 {
		t.Fatalf("driver ran %d times, want 3", d.Runs("vm1"))
	}
}

func TestFatalFaultEndsInErrorWithoutPlacement(t *testing.T) {
	w := newWorld(t, instance("vm1", events.StorageZFSReplicated, "n1", "n2", 512, 1024))
	d := newSim(t, sim.Fault{Instance: "vm1", Kind: sim.FaultFatal})
	w.start("n1", d)
	w.dispatch("req-1", 0, 0, "n1", migrate("vm1", "n1", "n2"))
	got := w.waitEnded("req-1", 0, 0)
	if got.Status != events.JobError || !strings.Contains(got.Error, "fatal") {
		t.Fatalf("OpcodeEnded = %+v, want error", got)
	}
	prog := w.read(events.TopicProgress)
	if end := payloads[events.End](prog); len(end) != 1 || end[0].State != events.EndFailed {
		t.Fatalf("End = %+v", end)
	}
	statuses := payloads[events.MoveStatusReported](prog)
	if n := len(statuses); n != 4 || statuses[2].Status != events.StatusUp || statuses[3].Status != events.StatusDown {
		t.Fatalf("statuses after failure %+v", statuses)
	}
	if placed := payloads[events.InstancePlaced](w.read(events.TopicInventory)); len(placed) != 0 {
		t.Fatalf("a failed opcode placed the instance: %+v", placed)
	}
	if d.Runs("vm1") != 1 {
		t.Fatalf("a fatal fault was retried: %d runs", d.Runs("vm1"))
	}
}

func TestOpcodeCancelledAbortsARunningOpcode(t *testing.T) {
	// 1 TiB takes 100 s of wall time at this speed: it is surely running.
	w := newWorld(t, instance("vm1", events.StorageZFSReplicated, "n1", "n2", 512, 1<<20))
	d := newSim(t)
	w.start("n1", d)
	w.dispatch("req-1", 0, 0, "n1", replaceDisks("vm1", "n1", "n3"))
	w.waitFor(events.TopicProgress, "data to flow", func(evs []events.Envelope) bool {
		for _, p := range payloads[events.Progress](evs) {
			if p.Current > 0 {
				return true
			}
		}
		return false
	})
	w.append(events.TopicOpcodes, events.New(
		events.OpcodeCancelled{Request: "req-1", Job: 0, Index: 0, Node: "n1", Reason: "request cancelled by operator:alice"},
		events.WithProducer("drove-planner"),
		events.WithReason(events.Reason{Actor: "operator:alice", Why: "changed my mind", RequestID: "req-1"})))

	got := w.waitEnded("req-1", 0, 0)
	if got.Status != events.JobCanceled || !strings.Contains(got.Error, "canceled") {
		t.Fatalf("OpcodeEnded = %+v, want canceled", got)
	}
	if end := payloads[events.End](w.read(events.TopicProgress)); len(end) != 1 || end[0].State != events.EndFailed {
		t.Fatalf("End = %+v", end)
	}
	if placed := payloads[events.InstancePlaced](w.read(events.TopicInventory)); len(placed) != 0 {
		t.Fatalf("a cancelled opcode placed the instance: %+v", placed)
	}
	if p, s, _ := d.Locate(t.Context(), "vm1"); p != "n1" || s != "n2" {
		t.Fatalf("after the abort the simulator has vm1 on %s/%s", p, s)
	}
}

func TestRestartNeitherRepeatsNorForgets(t *testing.T) {
	w := newWorld(t,
		instance("done", events.StorageZFSReplicated, "n1", "n2", 512, 512),
		instance("owed", events.StorageZFSReplicated, "n1", "n2", 512, 1<<20))
	d := newSim(t)
	first := w.start("n1", d)
	disp := w.dispatch("req-1", 0, 0, "n1", migrate("done", "n1", "n2"))
	w.waitEnded("req-1", 0, 0)

	// A second opcode is running when the executor goes down: shutting down
	// is not cancelling, so it must not end.
	w.dispatch("req-2", 0, 0, "n1", replaceDisks("owed", "n1", "n3"))
	w.waitFor(events.TopicOpcodes, "req-2 to start", func(evs []events.Envelope) bool {
		return len(payloads[events.OpcodeStarted](ofRequest(evs, "req-2"))) == 1
	})
	first.shutdown(t)
	if ended := payloads[events.OpcodeEnded](ofRequest(w.read(events.TopicOpcodes), "req-2")); len(ended) != 0 {
		t.Fatalf("shutdown ended an opcode: %+v", ended)
	}

	// The first dispatch is delivered again (same event), and the owed
	// opcode is made quick so the new executor can finish it.
	w.append(events.TopicOpcodes, disp)
	fast := newSim(t)
	w.start("n1", &counting{Driver: fast, d: d})
	if got := w.waitEnded("req-2", 0, 0); got.Status != events.JobSuccess {
		t.Fatalf("owed opcode ended %+v", got)
	}
	w.dispatch("req-3", 0, 0, "n1", migrate("done", "n2", "n1"))
	w.waitEnded("req-3", 0, 0) // the redelivered dispatch sits before this one

	ended := payloads[events.OpcodeEnded](ofRequest(w.read(events.TopicOpcodes), "req-1"))
	if len(ended) != 1 {
		t.Fatalf("req-1 ended %d times: %+v", len(ended), ended)
	}
	if n := d.Runs("done"); n != 1 {
		t.Fatalf("the first driver ran 'done' %d times", n)
	}
	if n := fast.Runs("done"); n != 1 { // req-3 only
		t.Fatalf("the restarted executor ran 'done' %d times, want once (req-3)", n)
	}
}

// counting runs the opcodes of a restarted executor on a fresh, fast
// simulator, keeping the old one's counts apart. Only the owed 1 TiB move
// is shrunk, so it finishes.
type counting struct {
	*sim.Driver
	d *sim.Driver
}

func (c *counting) Run(ctx context.Context, op executor.Op, report func(executor.Progress)) (executor.Result, error) {
	if op.Instance == "owed" {
		op.Size.DisksMiB = []int64{64}
	}
	return c.Driver.Run(ctx, op, report)
}

func TestExecutorsRunOnlyTheirOwnOpcodes(t *testing.T) {
	w := newWorld(t,
		instance("vm1", events.StorageZFSReplicated, "n1", "n2", 512, 512),
		instance("vm2", events.StorageRBD, "n2", "", 512, 512))
	d1, d2 := newSim(t), newSim(t)
	announce := func(node string) func(*executor.Config) {
		return func(c *executor.Config) {
			c.Announce = &events.NodeAnnounced{Name: node, Group: group, VMCapable: true}
		}
	}
	w.start("n1", d1, announce("n1"))
	w.start("n2", d2, announce("n2"))
	w.dispatch("req-1", 0, 0, "n1", migrate("vm1", "n1", "n2"))
	w.dispatch("req-1", 1, 0, "n2", migrate("vm2", "n2", "n3"))
	if got := w.waitEnded("req-1", 0, 0); got.Node != "n1" || got.Status != events.JobSuccess {
		t.Fatalf("job 0 ended %+v", got)
	}
	if got := w.waitEnded("req-1", 1, 0); got.Node != "n2" || got.Status != events.JobSuccess {
		t.Fatalf("job 1 ended %+v", got)
	}
	if d1.Runs("vm1") != 1 || d1.Runs("vm2") != 0 || d2.Runs("vm2") != 1 || d2.Runs("vm1") != 0 {
		t.Fatalf("runs: n1 vm1=%d vm2=%d, n2 vm1=%d vm2=%d", d1.Runs("vm1"), d1.Runs("vm2"), d2.Runs("vm1"), d2.Runs("vm2"))
	}
	started := payloads[events.OpcodeStarted](w.read(events.TopicOpcodes))
	if len(started) != 2 {
		t.Fatalf("started %+v", started)
	}
	var announced []string
	for _, e := range w.read(events.TopicInventory) {
		if e.Type == events.TypeNodeAnnounced && e.Producer != "test" {
			announced = append(announced, e.Reason.Actor)
		}
	}
	slices.Sort(announced)
	if !slices.Equal(announced, []string{"executor/n1", "executor/n2"}) {
		t.Fatalf("announcements by %v", announced)
	}
	placed := payloads[events.InstancePlaced](w.read(events.TopicInventory))
	for _, p := range placed {
		if p.Instance == "vm2" && (p.PrimaryNode != "n3" || p.SecondaryNode != "" || p.PreviousPrimary != "n2") {
			t.Fatalf("vm2 placed %+v", p)
		}
	}
}

func TestConcurrencyBoundsRunningOpcodes(t *testing.T) {
	w := newWorld(t,
		instance("big", events.StorageZFSReplicated, "n1", "n2", 512, 1<<20),
		instance("small", events.StorageZFSReplicated, "n1", "n2", 512, 64))
	w.start("n1", newSim(t), func(c *executor.Config) { c.Concurrency = 1 })
	w.dispatch("req-big", 0, 0, "n1", replaceDisks("big", "n1", "n3"))
	w.dispatch("req-small", 0, 0, "n1", replaceDisks("small", "n1", "n3"))
	w.waitFor(events.TopicOpcodes, "the big opcode to start", func(evs []events.Envelope) bool {
		return len(payloads[events.OpcodeStarted](ofRequest(evs, "req-big"))) == 1
	})
	w.append(events.TopicOpcodes, events.New(
		events.OpcodeCancelled{Request: "req-big", Job: 0, Index: 0, Node: "n1", Reason: "make room"},
		events.WithProducer("drove-planner"),
		events.WithReason(events.Reason{Actor: "operator:alice", Why: "make room", RequestID: "req-big"})))
	if got := w.waitEnded("req-small", 0, 0); got.Status != events.JobSuccess {
		t.Fatalf("small ended %+v", got)
	}
	// One slot: the small opcode started only after the big one ended.
	var order []string
	for _, e := range w.read(events.TopicOpcodes) {
		if e.Type == events.TypeOpcodeStarted || e.Type == events.TypeOpcodeEnded {
			order = append(order, e.CorrelationID+" "+e.Type)
		}
	}
	want := []string{"req-big opcode.started", "req-big opcode.ended", "req-small opcode.started", "req-small opcode.ended"}
	if !slices.Equal(order, want) {
		t.Fatalf("order %q, want %q", order, want)
	}
}

// A producer fenced under the executor (here a second producer takes the
// node's transactional id; under a partition the broker's epoch bump after
// an expired transaction does the same) ends Run with an error no
// supervisor takes for permanent, leaves the running opcode owed rather
// than ended, and a fresh start finishes it. The driver holds the move
// until the fence is in place and reports nothing, and heartbeats are
// off: the end events are the first append after the fence, so the
// producer meets the fence itself rather than a transaction cut by it.
func TestFencedProducerEndsRunToStartAfresh(t *testing.T) {
	w := newWorld(t, instance("vm1", events.StorageZFSReplicated, "n1", "n2", 512, 512))
	d := &silent{Driver: newSim(t), release: make(chan struct{})}
	first := w.start("n1", d, func(c *executor.Config) { c.Heartbeat = -1 })
	w.dispatch("req-1", 0, 0, "n1", migrate("vm1", "n1", "n2"))
	w.waitFor(events.TopicOpcodes, "req-1 to start", func(evs []events.Envelope) bool {
		return len(payloads[events.OpcodeStarted](ofRequest(evs, "req-1"))) == 1
	})

	kc := w.kcfg
	kc.TransactionalID = events.ExecutorGroup("n1")
	usurper, err := kafka.NewProducer(kc)
	if err != nil {
		t.Fatal(err)
	}
	if err := usurper.Fence(w.ctx); err != nil {
		t.Fatal(err)
	}
	usurper.Close()
	close(d.release)
	select {
	case err := <-first.done:
		first.once.Do(func() {}) // Run has returned: nothing left to shut down
		if !errors.Is(err, executor.ErrProducerFenced) || errors.Is(err, retry.ErrPermanent) {
			t.Fatalf("Run returned %v; want ErrProducerFenced, not permanent", err)
		}
	case <-w.ctx.Done():
		t.Fatal("Run did not end after its producer was fenced")
	}
	if ended := payloads[events.OpcodeEnded](ofRequest(w.read(events.TopicOpcodes), "req-1")); len(ended) != 0 {
		t.Fatalf("the fenced executor ended the opcode: %+v", ended)
	}

	w.start("n1", newSim(t))
	if got := w.waitEnded("req-1", 0, 0); got.Status != events.JobSuccess {
		t.Fatalf("owed opcode ended %+v after the fresh start", got)
	}
}

// silent holds every move until release is closed and reports nothing.
type silent struct {
	*sim.Driver
	release chan struct{}
}

func (g *silent) Run(ctx context.Context, op executor.Op, report func(executor.Progress)) (executor.Result, error) {
	select {
	case <-g.release:
	case <-ctx.Done():
		return executor.Result{}, ctx.Err()
	}
	return g.Driver.Run(ctx, op, func(executor.Progress) {})
}
