package evacsim

import (
	"fmt"
	"math"
	"slices"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/inventory"
	"github.com/drovehq/drove/planner/jobs"
)

// Config is one simulated evacuation.
type Config struct {
	// World declares the groups, nodes and instances (GroupDeclared,
	// NodeAnnounced, InstanceDeclared).
	World []events.Payload
	// Nodes are the nodes to evacuate (mode all).
	Nodes []string
	// MaxRunningMoves and MaxMovesPerNode are the caps (0: 5 and 2).
	MaxRunningMoves, MaxMovesPerNode int
	// AutoMovesPerNode and IndexOrder are passed to jobs.Env.
	AutoMovesPerNode, IndexOrder bool
	// Fail, if set, says whether an opcode ends in error (rolled back).
	Fail func(job, index int) bool
	// Plan, if set, is the plan to run instead of the one the planner
	// would compute (a plan the whole system made, to compare).
	Plan *events.PlanComputed
}

// Result is what happened.
type Result struct {
	Plan *events.PlanComputed
	// Makespan is the simulated seconds from the plan to the last end.
	Makespan float64
	// Bound is the lower bound of the plan's moves (planner.LowerBound).
	Bound planner.Bound
	// Links are the nodes' links as the inventory has them.
	Links planner.Links
	// Releases lists the jobs in release order; Violations every rule a
	// release broke (a dependency not met as it accepts, a cap).
	Releases   []int
	Violations []string
	// Released and Ended are each job's times, simulated seconds.
	Released, Ended map[int]float64
	Outcome         string
}

type running struct {
	job, index int
	node       string
	flow       planner.Transfer
	left       float64
}

type sim struct {
	cfg   Config
	inv   *inventory.Inventory
	st    *jobs.State
	env   jobs.Env
	res   Result
	live  []*running
	ended map[int]events.JobStatus
	now   float64
}

// Run evacuates cfg.Nodes and returns the makespan and what it checked.
func Run(cfg Config) (Result, error) {
	if cfg.MaxRunningMoves == 0 {
		cfg.MaxRunningMoves = 5
	}
	if cfg.MaxMovesPerNode == 0 {
		cfg.MaxMovesPerNode = 2
	}
	s := &sim{cfg: cfg, inv: inventory.New(), st: jobs.NewState(), ended: map[int]events.JobStatus{}}
	s.res.Released, s.res.Ended = map[int]float64{}, map[int]float64{}
	opts := planner.DefaultOptions()
	opts.MaxMovesPerNode = cfg.MaxMovesPerNode
	s.env = jobs.Env{Inv: s.inv, Apply: s.apply, Options: opts, MaxRunningMoves: cfg.MaxRunningMoves,
		Producer: "evacsim", AutoMovesPerNode: cfg.AutoMovesPerNode, IndexOrder: cfg.IndexOrder}
	for _, p := range cfg.World {
		s.read(p)
	}
	s.res.Links = jobs.LinksOf(s.inv)
	s.read(events.EvacuationRequested{Request: "r", Nodes: cfg.Nodes, Mode: events.EvacAll})
	if cfg.Plan != nil {
		p := *cfg.Plan
		p.Request = "r"
		s.res.Plan = &p
		s.read(p)
	}
	for {
		d := jobs.Decide(s.env, s.st, "r")
		s.take(d)
		if d.Outcome != "" {
			s.res.Outcome = d.Outcome
			break
		}
		if len(s.live) == 0 {
			return s.res, fmt.Errorf("evacsim: stuck at %.1f s with nothing running", s.now)
		}
		s.now += s.step()
	}
	s.res.Makespan = s.now
	var all [][]planner.Transfer
	for i := range s.res.Plan.Jobs {
		all = append(all, s.transfers(i))
	}
	s.res.Bound = planner.LowerBound(all, s.res.Links, cfg.MaxRunningMoves)
	return s.res, nil
}

func (s *sim) apply(e events.Envelope, p events.Payload) {
	if !s.st.Apply(e, p, inventory.Unread(e)) {
		s.inv.Apply(p, inventory.Unread(e))
	}
}

func (s *sim) read(p events.Payload) {
	s.apply(events.New(p, events.WithReason(events.Reason{Actor: "operator:sim", Why: "evacsim"})), p)
}

func (s *sim) instance(name string) *events.InstanceDeclared { return s.inv.Instances[name] }

func (s *sim) transfers(job int) []planner.Transfer {
	return jobs.JobTransfers(&s.res.Plan.Jobs[job], s.instance)
}

// take starts what a pass dispatched and checks what it released.
func (s *sim) take(d jobs.Decision) {
	for _, e := range d.Events {
		p, err := e.DecodePayload()
		if err != nil {
			panic(err) // the service's own events always decode
		}
		switch ev := p.(type) {
		case events.PlanComputed:
			s.res.Plan = &ev
		case events.JobReleased:
			s.check(ev.Job.Index)
			s.res.Releases = append(s.res.Releases, ev.Job.Index)
			s.res.Released[ev.Job.Index] = s.now
		case events.JobEnded:
			s.ended[ev.Job] = ev.Status
			s.res.Ended[ev.Job] = s.now
		case events.JobCancelled:
			s.ended[ev.Job] = events.JobCanceled
		case events.OpcodeDispatched:
			op := ev.Opcode
			f := planner.Transfer{From: op.From, To: op.To, Bytes: jobs.MoveBytes(op, s.instance(op.Instance))}
			s.live = append(s.live, &running{job: ev.Job, index: ev.Index, node: ev.Node, flow: f, left: float64(f.Bytes)})
		}
	}
}

// check records every rule the release of job i breaks.
func (s *sim) check(i int) {
	bad := func(format string, a ...any) {
		s.res.Violations = append(s.res.Violations, fmt.Sprintf("job %d: ", i)+fmt.Sprintf(format, a...))
	}
	spec := &s.res.Plan.Jobs[i]
	for _, d := range spec.Depends {
		st, ok := s.ended[i+d.Job]
		if !ok {
			bad("released before job %d ended", i+d.Job)
		} else if len(d.Statuses) > 0 && !slices.Contains(d.Statuses, st) {
			bad("released though job %d ended %s", i+d.Job, st)
		}
	}
	jobsRunning := map[int]bool{i: true}
	for _, r := range s.live {
		jobsRunning[r.job] = true
	}
	if len(jobsRunning) > s.cfg.MaxRunningMoves {
		bad("%d jobs run at once (cap %d)", len(jobsRunning), s.cfg.MaxRunningMoves)
	}
	if s.cfg.AutoMovesPerNode {
		return
	}
	perNode := map[string]int{}
	for j := range jobsRunning {
		for _, n := range jobs.Senders(&s.res.Plan.Jobs[j]) {
			perNode[n]++
		}
	}
	for n, c := range perNode {
		if c > s.cfg.MaxMovesPerNode {
			bad("node %s sends %d jobs (cap %d)", n, c, s.cfg.MaxMovesPerNode)
		}
	}
}

// step runs the moves until the next opcode ends, reads the ends, and
// returns the simulated seconds it took.
func (s *sim) step() float64 {
	flows := make([]planner.Transfer, len(s.live))
	for k, r := range s.live {
		flows[k] = r.flow
	}
	rates := planner.ShareLinks(flows, s.res.Links)
	dt := math.Inf(1)
	for k, r := range s.live {
		if r.left <= 0 {
			dt = 0
		} else if rates[k] > 0 {
			dt = min(dt, r.left/rates[k])
		}
	}
	var still []*running
	for k, r := range s.live {
		r.left -= rates[k] * dt
		if r.left > 1e-6*float64(r.flow.Bytes) {
			still = append(still, r)
			continue
		}
		st := events.JobSuccess
		msg := ""
		if s.cfg.Fail != nil && s.cfg.Fail(r.job, r.index) {
			st, msg = events.JobError, "injected"
		}
		s.read(events.OpcodeEnded{Request: "r", Job: r.job, Index: r.index, Node: r.node, Status: st, Error: msg})
	}
	s.live = still
	return dt
}
