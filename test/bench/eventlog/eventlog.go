// Package eventlog generates the benchmarks' log: a cluster's inventory,
// then evacuations with their plans, jobs, dispatches and many progress
// events, until a number of events is reached; and appends it. The
// projector's and the Kafka benchmarks fold the same log.
package eventlog

import (
	"context"
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// workload builds the log of an evacuation-heavy cluster, in the order the
// services would append it, as the transactions they would append it in.
// Log is a generated log, as transactions of messages.
type Log struct {
	n     int       // events wanted
	Count int       // events built so far
	clock time.Time // advances one second per event: every event has its own time
	Txs   [][]kafka.Message
	Types map[string]int // events per type

	nodes     []string
	groups    []string
	instances []inst
	byNode    map[string][]int // primary node -> instances
}

type inst struct {
	name, group, primary, secondary string
}

// The cluster: 4 groups of 50 nodes, 20 mirrored instances per node.
const (
	groupCount       = 4
	nodesPerGroup    = 50
	instancesPerNode = 20
	// syncsPerMove is the progress events of a move's sync phase: a real
	// executor reports every few seconds of a long copy.
	syncsPerMove = 24
)

// Build generates a log of at least n events.
func Build(n int) *Log {
	w := &Log{n: n, clock: time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC),
		Types: map[string]int{}, byNode: map[string][]int{}}
	w.inventory()
	for r := 0; !w.full(); r++ {
		w.evacuation(r)
	}
	return w
}

func (w *Log) full() bool { return w.Count >= w.n }

// tx appends one transaction of evs, each to its type's topic, cut at n.
func (w *Log) tx(evs ...events.Envelope) {
	var msgs []kafka.Message
	for _, e := range evs {
		if w.full() {
			break
		}
		topic, err := e.Topic()
		if err != nil {
			panic(err) // the bench's own events; a type without a topic is a build mistake
		}
		msgs = append(msgs, kafka.Message{Topic: topic, Event: e})
		w.Types[e.Type]++
		w.Count++
	}
	if len(msgs) > 0 {
		w.Txs = append(w.Txs, msgs)
	}
}

// ev stamps p with the next second and a reason trail.
func (w *Log) ev(p events.Payload, producer, request string, cause *events.Envelope) events.Envelope {
	w.clock = w.clock.Add(time.Second)
	opts := []events.Option{events.WithProducer(producer), events.WithTime(w.clock),
		events.WithReason(events.Reason{Actor: "operator:bench", Why: "maintenance window", RequestID: request})}
	if cause != nil {
		opts = append(opts, events.CausedBy(*cause))
	}
	return events.New(p, opts...)
}

// inventory declares the groups, nodes and instances, as an import would.
func (w *Log) inventory() {
	var evs []events.Envelope
	for g := range groupCount {
		name := fmt.Sprintf("group-%d", g)
		w.groups = append(w.groups, name)
		evs = append(evs, w.ev(events.GroupDeclared{Name: name, AllocPolicy: events.AllocPreferred,
			Tags: []string{"dc:bench"}}, "import", "", nil))
	}
	res := events.Resources{MemoryMiB: 262144, DiskMiB: 4 << 20, CPUs: 64, Spindles: 12}
	for g, group := range w.groups {
		for k := range nodesPerGroup {
			name := fmt.Sprintf("node-%d-%02d", g, k)
			w.nodes = append(w.nodes, name)
			evs = append(evs, w.ev(events.NodeAnnounced{Name: name, Group: group, Total: res,
				Free:      events.Resources{MemoryMiB: 65536, DiskMiB: 1 << 20, CPUs: 16, Spindles: 4},
				VMCapable: true}, "import", "", nil))
		}
	}
	w.tx(evs...)
	evs = nil
	for g, group := range w.groups {
		for k := range nodesPerGroup {
			primary := w.nodes[g*nodesPerGroup+k]
			secondary := w.nodes[g*nodesPerGroup+(k+1)%nodesPerGroup]
			for i := range instancesPerNode {
				in := inst{name: fmt.Sprintf("vm-%s-%02d", primary, i), group: group, primary: primary, secondary: secondary}
				w.byNode[primary] = append(w.byNode[primary], len(w.instances))
				w.instances = append(w.instances, in)
				evs = append(evs, w.ev(events.InstanceDeclared{Name: in.name, Owner: fmt.Sprintf("team-%d", i%7),
					Size:    events.Size{MemoryMiB: 8192, VCPUs: 4, DisksMiB: []int64{40960, 10240}},
					Storage: events.StorageDRBD, RunState: events.RunRunning, PrimaryNode: primary,
					SecondaryNode: secondary, Tags: []string{"tier:web"}}, "import", "", nil))
				if len(evs) == 500 {
					w.tx(evs...)
					evs = nil
				}
			}
		}
	}
	w.tx(evs...)
}

// evacuation empties one node of its primaries: the request, a plan with a
// job per instance, and each job's life, with the executor's progress.
// Every fifth request is a dry run that is approved first; every 25th move
// fails in its sync phase.
func (w *Log) evacuation(r int) {
	node := w.nodes[(r*7)%len(w.nodes)]
	id := fmt.Sprintf("evac-%05d", r)
	dry := r%5 == 0
	req := w.ev(events.EvacuationRequested{Request: id, Nodes: []string{node}, Mode: events.EvacPrimaryOnly,
		DryRun: dry, MaxMovesPerNode: 4}, "gateway", id, nil)
	w.tx(req, w.ev(events.AuditRecorded{Action: "evacuate", Subject: node, Outcome: events.AuditAllowed},
		"gateway", id, &req))

	jobs, moved := w.evacuationJobs(node)
	plan := w.ev(events.PlanComputed{Request: id, Moved: moved, Failed: []events.Failed{}, Jobs: jobs,
		ScoreBefore: 12.5, ScoreAfter: 11.75}, "planner", id, &req)
	drained := w.ev(events.NodeUpdated{Name: node, Group: w.instances[w.byNode[node][0]].group,
		Total:   events.Resources{MemoryMiB: 262144, DiskMiB: 4 << 20, CPUs: 64, Spindles: 12},
		Free:    events.Resources{MemoryMiB: 65536, DiskMiB: 1 << 20, CPUs: 16, Spindles: 4},
		Drained: true, VMCapable: true}, "planner", id, &req)
	if dry {
		w.tx(drained, plan)
		w.tx(w.ev(events.RequestApproved{Request: id}, "gateway", id, &plan))
		plan = w.ev(events.PlanComputed{Request: id, Moved: moved, Failed: []events.Failed{}, Jobs: jobs,
			ScoreBefore: 12.5, ScoreAfter: 11.75}, "planner", id, &req)
		w.tx(plan)
	} else {
		w.tx(drained, plan)
	}

	failed := []events.Failed{}
	done := []events.Moved{}
	for j, job := range jobs {
		if w.full() {
			return
		}
		in := w.instances[w.byNode[node][j]]
		fails := (r*len(jobs)+j)%25 == 24
		f, m := w.job(id, j, job, in, fails, &plan)
		if fails {
			failed = append(failed, f)
		} else {
			done = append(done, m)
		}
	}
	w.tx(w.ev(events.RequestFinished{Request: id, Moved: done, Failed: failed}, "planner", id, &plan))
}

// evacuationJobs plans node's evacuation: a job per primary, each after
// the job four before it.
func (w *Log) evacuationJobs(node string) ([]events.Job, []events.Moved) {
	var jobs []events.Job
	var moved []events.Moved
	for j, ix := range w.byNode[node] {
		in := w.instances[ix]
		target := w.nodes[(indexOf(w.nodes, in.primary)+2+j%3)%len(w.nodes)]
		if target == in.secondary {
			target = w.nodes[(indexOf(w.nodes, target)+1)%len(w.nodes)]
		}
		job := events.Job{Index: j, Opcodes: []events.Opcode{{OpID: events.OpInstanceMigrate,
			Instance: in.name, Mode: events.ModeMigrateLive, From: in.primary, To: target}}}
		if j >= 4 {
			job.Depends = []events.Dependency{{Job: -4, Statuses: []events.JobStatus{events.JobSuccess, events.JobError}}}
		}
		jobs = append(jobs, job)
		moved = append(moved, events.Moved{Instance: in.name, Group: in.group, Nodes: []string{target, in.secondary}})
	}
	return jobs, moved
}

// job is job j's life, from its release to its end; a failing one stops
// in its sync phase. It returns the job's failure or its move.
func (w *Log) job(id string, j int, job events.Job, in inst, fails bool, plan *events.Envelope) (events.Failed, events.Moved) {
	op := job.Opcodes[0]
	rel := w.ev(events.JobReleased{Request: id, Job: job}, "planner", id, plan)
	disp := w.ev(events.OpcodeDispatched{Request: id, Job: j, Node: op.From, Opcode: op}, "planner", id, &rel)
	w.tx(rel, disp)
	exec := "executor-" + op.From
	w.tx(w.ev(events.OpcodeStarted{Request: id, Job: j, Node: op.From}, exec, id, &disp),
		w.ev(events.MoveStatusReported{Request: id, Instance: in.name, Node: op.From,
			Status: events.StatusMigrationSource}, exec, id, &disp),
		w.ev(events.MoveStatusReported{Request: id, Instance: in.name, Node: op.To,
			Status: events.StatusMigrationDestination}, exec, id, &disp))
	w.tx(w.ev(events.Progress{Request: id, Job: j, Instance: in.name, Node: op.From, Phase: events.PhaseBegin,
		State: events.ProgressRunning, Message: "preparing target"}, exec, id, &disp))
	total := int64(40960+10240) << 20
	started := w.clock
	for s := range syncsPerMove {
		if fails && s == syncsPerMove/2 {
			break
		}
		cur := total * int64(s+1) / syncsPerMove
		if s%8 == 7 { // a dirty-page round restarts the copy: a new sync
			started = w.clock
		}
		w.tx(w.ev(events.Progress{Request: id, Job: j, Instance: in.name, Node: op.From, Phase: events.PhaseSync,
			State: events.ProgressRunning, Current: cur, Total: total, ETASeconds: float64(syncsPerMove - s),
			BytesPerSecond: 1 << 30, Started: started}, exec, id, &disp))
	}
	status, end := events.JobSuccess, events.EndSuccessful
	var msg string
	if fails {
		status, end, msg = events.JobError, events.EndFailed, "target refused the memory transfer"
	} else {
		w.tx(w.ev(events.Progress{Request: id, Job: j, Instance: in.name, Node: op.From, Phase: events.PhaseSwitch,
			State: events.ProgressRunning, Current: total, Total: total}, exec, id, &disp))
	}
	last := []events.Envelope{
		w.ev(events.OpcodeEnded{Request: id, Job: j, Node: op.From, Status: status, Error: msg}, exec, id, &disp),
		w.ev(events.End{Request: id, Job: j, Instance: in.name, Node: op.From, Phase: events.PhaseSync,
			State: end, Message: msg}, exec, id, &disp),
	}
	from, to := events.StatusDown, events.StatusUp
	if fails {
		from, to = events.StatusUp, events.StatusDown
	}
	last = append(last,
		w.ev(events.MoveStatusReported{Request: id, Instance: in.name, Node: op.From, Status: from}, exec, id, &disp),
		w.ev(events.MoveStatusReported{Request: id, Instance: in.name, Node: op.To, Status: to}, exec, id, &disp))
	if !fails {
		last = append(last, w.ev(events.InstancePlaced{Instance: in.name, Group: in.group, PrimaryNode: op.To,
			SecondaryNode: in.secondary, PreviousGroup: in.group, PreviousPrimary: in.primary,
			PreviousSecondary: in.secondary, Request: id}, exec, id, &disp))
	}
	w.tx(last...)
	w.tx(w.ev(events.JobEnded{Request: id, Job: j, Status: status, Error: msg}, "planner", id, &last[0]))
	return events.Failed{Instance: in.name, Reason: msg}, events.Moved{Instance: in.name, Group: in.group, Nodes: []string{op.To, in.secondary}}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// Append appends txs, merging consecutive transactions until one holds at
// least per events, and returns how many transactions it appended.
func Append(ctx context.Context, kcfg kafka.Config, txs [][]kafka.Message, per int) (int, error) {
	prod, err := kafka.NewProducer(kcfg)
	if err != nil {
		return 0, err
	}
	defer prod.Close()
	n := 0
	var cur []kafka.Message
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		n++
		err := prod.AppendBatch(ctx, cur...)
		cur = cur[:0]
		return err
	}
	for _, tx := range txs {
		cur = append(cur, tx...)
		if len(cur) >= per {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	return n, flush()
}
