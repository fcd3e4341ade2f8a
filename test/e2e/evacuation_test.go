package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor/sim"
	"github.com/drovehq/drove/gateway/wire"
)

// Evacuate two demo nodes in mode all through the HTTP API: every instance
// on them ends where the plan says, the views show it, every job succeeds,
// and jobs ran after the jobs they depend on.
func TestEvacuateTwoNodes(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	nodes := []string{"node-g1-001", "node-g2-003"}
	var before []string
	for _, n := range nodes {
		before = append(before, names(e.instances(n))...)
	}
	t0 := time.Now()
	a, err := e.api.Evacuate(ctx, wire.Evacuation{Nodes: nodes, Mode: "all", Reason: "e2e: two nodes"})
	if err != nil {
		t.Fatal(err)
	}
	p := e.finish(a.Request, 3*time.Minute)
	t.Logf("evacuating %v (%d instances) took %s end to end", nodes, len(before), time.Since(t0).Round(time.Millisecond))

	// Only instances whose disks exist on one node alone stay: the plan
	// says why, and so does the outcome.
	pl := e.plan(a.Request)
	stay := map[string]bool{}
	for _, f := range pl.Failed {
		if !strings.Contains(f.Reason, "not mirrored") {
			t.Errorf("the plan cannot move %s: %s", f.Instance, f.Reason)
		}
		stay[f.Instance] = true
	}
	if len(pl.Moved)+len(pl.Failed) != len(before) || len(pl.Moved) < len(before)/2 {
		t.Fatalf("the plan moves %d and fails %d of %d instances", len(pl.Moved), len(pl.Failed), len(before))
	}
	if len(p.Failed) != len(pl.Failed) {
		t.Fatalf("the outcome fails %d instances, the plan %d: %+v", len(p.Failed), len(pl.Failed), p.Failed)
	}
	// The projector catches up on its own; wait for the last placement.
	for _, m := range pl.Moved {
		e.waitFor(m.Instance+" placed as planned", 30*time.Second, func() bool {
			in := e.instance(m.Instance)
			got := []string{in.Primary}
			if in.Secondary != "" {
				got = append(got, in.Secondary)
			}
			return slices.Equal(got, m.Nodes) && in.Group == m.Group
		})
	}
	checkNodesEmptied(t, e, nodes, stay)
	jobs := e.jobs(a.Request)
	withDeps := checkReleasedAfterDeps(t, jobs)
	// The queue keeps the running limits at release (the plan chains no
	// node's sends): at each release, at most 2 jobs send from a node and
	// 5 run in all.
	sends := checkLimitsAtRelease(t, jobs)
	if withDeps == 0 && !slices.ContainsFunc(nodes, func(n string) bool { return sends[n] > 2 }) {
		t.Errorf("no job depends on another and no node sends more than 2: the order and limit checks checked nothing")
	}
	e.replayEqual()
}

// checkNodesEmptied checks the evacuated nodes hold only the instances that
// stay and are drained.
func checkNodesEmptied(t *testing.T, e *env, nodes []string, stay map[string]bool) {
	ctx := context.Background()
	for _, n := range nodes {
		for _, in := range e.instances(n) {
			if !stay[in.Name] {
				t.Errorf("node %s still holds %s", n, in.Name)
			}
		}
		var node struct {
			Drained bool `json:"drained"`
		}
		if err := e.api.Get(ctx, "/v1/nodes/"+n, &node); err != nil || !node.Drained {
			t.Errorf("node %s is not drained (%v)", n, err)
		}
	}
}

// checkReleasedAfterDeps checks every job succeeded and was released after
// the jobs it depends on ended; it returns how many dependencies it checked.
func checkReleasedAfterDeps(t *testing.T, jobs []job) (withDeps int) {
	byIndex := map[int]job{}
	for _, j := range jobs {
		byIndex[j.Index] = j
	}
	for _, j := range jobs {
		if j.State != "success" {
			t.Errorf("job %d (%s) ended %s %s", j.Index, j.Instance, j.State, j.Error)
		}
		for _, d := range deps(t, j) {
			withDeps++
			dep := byIndex[j.Index+d.Job]
			if dep.EndedAt == nil || j.ReleasedAt == nil || j.ReleasedAt.Before(*dep.EndedAt) {
				t.Errorf("job %d was released at %v, before job %d it depends on ended at %v", j.Index, j.ReleasedAt, dep.Index, dep.EndedAt)
			}
		}
	}
	return withDeps
}

// checkLimitsAtRelease checks the running limits at each job's release and
// returns how many jobs each node sent.
func checkLimitsAtRelease(t *testing.T, jobs []job) (sends map[string]int) {
	sends = map[string]int{}
	for _, j := range jobs {
		if j.ReleasedAt == nil {
			continue
		}
		perNode, total := map[string]int{}, 0
		for _, k := range jobs {
			if k.ReleasedAt == nil || k.ReleasedAt.After(*j.ReleasedAt) || (k.EndedAt != nil && !k.EndedAt.After(*j.ReleasedAt)) {
				continue
			}
			total++
			for _, n := range senders(k) {
				perNode[n]++
			}
		}
		for n, c := range perNode {
			if c > 2 {
				t.Errorf("at job %d's release %s sends %d jobs (limit 2)", j.Index, n, c)
			}
		}
		if total > 5 {
			t.Errorf("at job %d's release %d jobs run (limit 5)", j.Index, total)
		}
		for _, n := range senders(j) {
			sends[n]++
		}
	}
	return sends
}

// A fatal fault in one instance's move: that instance stays where it was
// and is reported failed with the fault; jobs that needed its job to
// succeed are cancelled; everything else moves.
func TestFatalFaultLeavesTheInstanceInPlace(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	node := "node-g1-002"
	on := e.instances(node)
	var victim instance
	for _, in := range on {
		if in.Storage == "drbd" && in.Primary == node {
			victim = in
			break
		}
	}
	if victim.Name == "" {
		t.Fatalf("no drbd primary on %s: %v", node, names(on))
	}
	for _, n := range e.sys.Nodes {
		if err := e.sys.Sim(n).Inject(sim.Fault{Instance: victim.Name, Kind: "fatal"}); err != nil {
			t.Fatal(err)
		}
	}
	a, err := e.api.Evacuate(ctx, wire.Evacuation{Nodes: []string{node}, Mode: "all"})
	if err != nil {
		t.Fatal(err)
	}
	p := e.finish(a.Request, 3*time.Minute)

	jobs := e.jobs(a.Request)
	var victimJob job
	for _, j := range jobs {
		if j.Instance == victim.Name {
			victimJob = j
		}
	}
	if victimJob.State != "error" {
		t.Fatalf("the victim's job ended %q, want error", victimJob.State)
	}
	failed := map[string]string{}
	for _, f := range p.Failed {
		failed[f.Instance] = f.Reason
	}
	if failed[victim.Name] == "" {
		t.Fatalf("%s is not reported failed: %+v", victim.Name, p.Failed)
	}
	for _, j := range jobs {
		if j.Index == victimJob.Index {
			continue
		}
		needsSuccess := false
		for _, d := range deps(t, j) {
			if j.Index+d.Job == victimJob.Index && len(d.Statuses) > 0 && !slices.Contains(d.Statuses, "error") {
				needsSuccess = true
			}
		}
		switch {
		case needsSuccess && j.State != "canceled":
			t.Errorf("job %d needed job %d to succeed but ended %s", j.Index, victimJob.Index, j.State)
		case needsSuccess && failed[j.Instance] == "":
			t.Errorf("job %d was cancelled but %s is not reported failed", j.Index, j.Instance)
		case !needsSuccess && j.State != "success" && j.State != "canceled":
			t.Errorf("job %d (%s) ended %s: %s", j.Index, j.Instance, j.State, j.Error)
		}
	}
	e.waitFor("the views to settle", 30*time.Second, func() bool {
		in := e.instance(victim.Name)
		return in.Primary == victim.Primary && in.Secondary == victim.Secondary
	})
	for _, m := range p.Moved {
		if m.Instance == victim.Name {
			t.Fatalf("%s reported moved", victim.Name)
		}
	}
	if len(p.Moved)+len(p.Failed) != len(on) {
		t.Errorf("moved %d + failed %d != %d instances on the node", len(p.Moved), len(p.Failed), len(on))
	}
	t.Logf("victim %s failed: %s", victim.Name, failed[victim.Name])
}

// Kill the projector and the evacuated node's executor in the middle of an
// evacuation, then start them again: the evacuation completes, and the
// views equal a replay from offset zero (no duplicate, no missing row).
func TestRestartProjectorAndExecutorMidEvacuation(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	node := "node-g3-004"
	a, err := e.api.Evacuate(ctx, wire.Evacuation{Nodes: []string{node}, Mode: "all"})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("two jobs to end", time.Minute, func() bool {
		n := 0
		for _, j := range e.tryJobs(a.Request) {
			if j.State == "success" {
				n++
			}
		}
		return n >= 2
	})
	for _, part := range []string{"projector", "executor/" + node} {
		if err := e.sys.StopPart(ctx, part); err != nil {
			t.Fatalf("stopping %s: %v", part, err)
		}
	}
	if err := e.sys.StartProjector(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.sys.StartExecutor(ctx, node); err != nil {
		t.Fatal(err)
	}
	p := e.finish(a.Request, 3*time.Minute)
	if len(p.Failed) != 0 {
		t.Errorf("not moved after the restarts: %+v", p.Failed)
	}
	// The log still grows while replay runs (executors' heartbeats): the
	// replay folded every event there was before it and none that is not.
	before := e.countAll()
	rep := e.replayEqual()
	if after := e.countAll(); rep.Events < before || rep.Events > after {
		t.Errorf("replay folded %d events, the log had %d before and %d after", rep.Events, before, after)
	}
	dispatched := e.countEvents(events.TopicOpcodes, events.TypeOpcodeDispatched)
	ended := e.countEvents(events.TopicOpcodes, events.TypeOpcodeEnded)
	if ended < dispatched {
		t.Errorf("%d opcodes dispatched, %d ended", dispatched, ended)
	}
}

func (e *env) countAll() int {
	n := 0
	for _, topic := range events.Topics() {
		recs, err := readAll(e, topic)
		if err != nil {
			e.t.Fatal(err)
		}
		n += len(recs)
	}
	return n
}

// Bad requests get a 4xx naming the problem, and nothing is appended.
func TestBadRequestsAppendNothing(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	a, err := e.api.Evacuate(ctx, wire.Evacuation{Nodes: []string{"node-g2-005"}, Mode: "all", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	busy := e.instances("node-g2-005")[0]
	other := busy.Primary
	if other == "node-g2-005" {
		other = busy.Secondary
	}
	requested := func() int {
		return e.countEvents(events.TopicRequests, events.TypeEvacuationRequested) +
			e.countEvents(events.TopicRequests, events.TypeGroupChangeRequested)
	}
	base := requested()
	for _, tc := range []struct {
		name   string
		body   any
		path   string
		status int
		says   string
	}{
		{"unknown node", wire.Evacuation{Nodes: []string{"node-zz-999"}, Mode: "all"}, "/v1/evacuations", http.StatusNotFound, "node-zz-999"},
		{"unknown mode", wire.Evacuation{Nodes: []string{"node-g1-003"}, Mode: "sideways"}, "/v1/evacuations", http.StatusBadRequest, "sideways"},
		{"malformed JSON", rawJSON(`{"nodes": ["node-g1-003"], "mode": `), "/v1/evacuations", http.StatusBadRequest, "JSON"},
		{"no nodes", wire.Evacuation{Mode: "all"}, "/v1/evacuations", http.StatusBadRequest, "nodes"},
		{"instance already being moved", wire.Evacuation{Nodes: []string{other}, Mode: "all"}, "/v1/evacuations", http.StatusConflict, busy.Name},
		{"unknown instance", wire.GroupChange{Instances: []string{"inst-nope"}}, "/v1/group-changes", http.StatusNotFound, "inst-nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var status int
			var err error
			if raw, ok := tc.body.(rawJSON); ok {
				status, err = e.postRaw(tc.path, string(raw))
			} else {
				status, err = e.api.Do(ctx, http.MethodPost, tc.path, tc.body, nil)
			}
			var apiErr *wire.Error
			if status != tc.status || !errors.As(err, &apiErr) || !strings.Contains(apiErr.Message, tc.says) {
				t.Fatalf("got %d %v, want %d mentioning %q", status, err, tc.status, tc.says)
			}
		})
	}
	if got := requested(); got != base {
		t.Fatalf("bad requests appended %d request events", got-base)
	}
	_ = a
}

// rawJSON is a body sent as it is, malformed or not.
type rawJSON string

func (e *env) postRaw(path, body string) (int, error) {
	resp, err := http.Post(e.api.Base+path, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Error wire.Error `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return resp.StatusCode, err
	}
	out.Error.Status = resp.StatusCode
	return resp.StatusCode, &out.Error
}

func readAll(e *env, topic string) ([]kafka.Record, error) {
	return kafka.ReadAll(context.Background(), e.kcfg, topic)
}

// senders are the nodes a job's opcodes run from.
func senders(j job) []string {
	var out []string
	for _, op := range j.Opcodes {
		if op.From != "" && !slices.Contains(out, op.From) {
			out = append(out, op.From)
		}
	}
	return out
}
