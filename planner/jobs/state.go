package jobs

import (
	"cmp"
	"slices"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/inventory"
)

// State is the fold of requests and their jobs: drove.requests,
// drove.plans, drove.jobs and drove.opcodes. Every fact in it is set, never
// toggled or counted, so folding an event twice (the service applies its
// own decisions at once, then reads them back) leaves the state as it was,
// and events of different topics may be folded in any order (Kafka orders
// a key's events, not a topic's against another's).
type State struct {
	requests map[string]*request
	// order lists request ids by the log position of the request itself
	// (see inventory.Pos), so that after a replay the older of two
	// conflicting requests is the one planned, whatever order partitions
	// were read in.
	order    []string
	unsorted bool
}

// NewState returns an empty fold.
func NewState() *State { return &State{requests: map[string]*request{}} }

// request is one request's whole story. Facts arrive keyed by request id
// before the request itself may have been read (replay reads topics side by
// side), so a request exists as soon as any of its events does; only one
// whose EvacuationRequested or GroupChangeRequested was read is acted on.
type request struct {
	id   string
	kind string // events.TypeEvacuationRequested, TypeGroupChangeRequested, or "" (unknown yet)

	origin    events.Envelope // the event asking for it
	originPos inventory.Pos
	evac      events.EvacuationRequested
	change    events.GroupChangeRequested

	approved, cancelled *events.Envelope
	rejected, finished  bool

	plan   *events.PlanComputed
	planID string
	parts  events.PlanParts // a plan in parts, read halfway
	jobs   map[int]*job

	// last is the last event others wrote about this request; decisions
	// with no more precise cause (a freed slot, a restart) name it.
	last    events.Envelope
	lastPos inventory.Pos

	// refreshed is set when an approval's re-plan was done by this
	// process. It is not in the log: after a restart an approved request
	// with nothing released yet is simply re-planned again, which appends a
	// new plan only if the inventory changed.
	refreshed bool
}

func (r *request) dryRun() bool {
	return (r.kind == events.TypeEvacuationRequested && r.evac.DryRun) ||
		(r.kind == events.TypeGroupChangeRequested && r.change.DryRun)
}

// job is one job of the request's plan, by index.
type job struct {
	released  bool
	spec      *events.Job // as released; the plan's job before that
	cancelled string      // reason, when cancelled before it ran
	ended     events.JobStatus
	endErr    string
	endEnv    events.Envelope // JobEnded or JobCancelled, for causation
	ops       map[int]*opcode
}

// done reports whether the job has a fate: ended, or cancelled unreleased.
func (j *job) done() bool { return j.ended != "" || j.cancelled != "" }

// status is how a done job counts for its dependents: a cancelled job
// ended "canceled", as in Ganeti.
func (j *job) status() events.JobStatus {
	if j.cancelled != "" {
		return events.JobCanceled
	}
	return j.ended
}

func (j *job) running() bool { return j.released && !j.done() }

// opcode is one opcode of a job, by index.
type opcode struct {
	dispatched string // node it was sent to
	started    bool
	ended      events.JobStatus
	endErr     string
	endEnv     events.Envelope
	cancelSent bool
	// rate is the last rate its executor measured (Progress), bytes per
	// second; 0 until one is.
	rate int64
}

func (s *State) request(id string) *request {
	r, added := inventory.Entry(s.requests, id, func() *request { return &request{id: id, jobs: map[int]*job{}} })
	if added {
		s.order = append(s.order, id)
	}
	return r
}

func (r *request) job(i int) *job {
	j, _ := inventory.Entry(r.jobs, i, func() *job { return &job{ops: map[int]*opcode{}} })
	return j
}

func (j *job) op(i int) *opcode {
	o, _ := inventory.Entry(j.ops, i, func() *opcode { return &opcode{} })
	return o
}

// Apply folds one event found at pos. It reports whether the event is one
// of requests and jobs; others are left to the other folds.
func (s *State) Apply(env events.Envelope, p events.Payload, pos inventory.Pos) bool {
	if pr, ok := p.(events.Progress); ok {
		s.applyProgress(pr)
		return false // the migrations' fold reads progress too
	}
	r := s.applyRequest(env, p, pos)
	if r == nil {
		r = s.applyJob(env, p)
	}
	if r == nil {
		return false
	}
	switch p.(type) {
	case events.EvacuationRequested, events.GroupChangeRequested, events.RequestApproved,
		events.RequestCancelled, events.OpcodeStarted, events.OpcodeEnded:
		// Only what others write: the service's own events read back
		// are effects, not causes. The latest by log position, not by
		// when it was read, so that every replay picks the same.
		if r.last.ID == "" || pos.Compare(r.lastPos) > 0 {
			r.last, r.lastPos = env, pos
		}
	}
	return true
}

// applyRequest folds an event of drove.requests or drove.plans and
// returns its request; nil for other events.
func (s *State) applyRequest(env events.Envelope, p events.Payload, pos inventory.Pos) *request {
	var r *request
	switch e := p.(type) {
	case events.EvacuationRequested:
		r = s.request(e.Request)
		if r.kind == "" {
			r.kind, r.origin, r.originPos, r.evac = env.Type, env, pos, e
			s.unsorted = true
		}
	case events.GroupChangeRequested:
		r = s.request(e.Request)
		if r.kind == "" {
			r.kind, r.origin, r.originPos, r.change = env.Type, env, pos, e
			s.unsorted = true
		}
	case events.RequestApproved:
		r = s.request(e.Request)
		if r.approved == nil {
			r.approved = &env
		}
	case events.RequestCancelled:
		r = s.request(e.Request)
		if r.cancelled == nil {
			r.cancelled = &env
		}
	case events.RequestRejected:
		r = s.request(e.Request)
		r.rejected = true
		s.prune(r.id) // closed (snapshot.go)
	case events.RequestFinished:
		r = s.request(e.Request)
		r.finished = true
		s.prune(r.id)
	case events.PlanComputed:
		r = s.request(e.Request)
		// Plans of a request share its partition, so the last one read is
		// the last one written. Job facts are kept: a plan is replaced only
		// before any of its jobs has a fate. A plan in parts (same id) is
		// taken once its last part is read.
		id := e.Plan
		if id == "" {
			id = env.ID
		}
		if r.planID == id {
			break
		}
		if whole, ok := r.parts.Add(e); ok {
			r.plan, r.planID = &whole, id
		}
	}
	return r
}

// applyJob folds an event of drove.jobs or drove.opcodes and returns its
// request; nil for other events.
func (s *State) applyJob(env events.Envelope, p events.Payload) *request {
	var r *request
	switch e := p.(type) {
	case events.JobReleased:
		r = s.request(e.Request)
		j := r.job(e.Job.Index)
		j.released, j.spec = true, &e.Job
	case events.JobCancelled:
		r = s.request(e.Request)
		j := r.job(e.Job)
		if !j.done() {
			j.cancelled, j.endEnv = e.Reason, env
		}
	case events.JobEnded:
		r = s.request(e.Request)
		j := r.job(e.Job)
		if j.ended == "" {
			j.ended, j.endErr, j.endEnv = e.Status, e.Error, env
			j.cancelled = "" // ended is the stronger fact: it ran
		}
	case events.OpcodeDispatched:
		r = s.request(e.Request)
		r.job(e.Job).op(e.Index).dispatched = e.Node
	case events.OpcodeStarted:
		r = s.request(e.Request)
		r.job(e.Job).op(e.Index).started = true
	case events.OpcodeEnded:
		r = s.request(e.Request)
		o := r.job(e.Job).op(e.Index)
		if o.ended == "" {
			o.ended, o.endErr, o.endEnv = e.Status, e.Error, env
		}
	case events.OpcodeCancelled:
		r = s.request(e.Request)
		r.job(e.Job).op(e.Index).cancelSent = true
	}
	return r
}

// Order returns the request ids, oldest request first; ids whose request
// was not read yet come last.
func (s *State) Order() []string {
	if s.unsorted {
		slices.SortStableFunc(s.order, func(a, b string) int {
			ra, rb := s.requests[a], s.requests[b]
			switch {
			case ra.kind == "" || rb.kind == "":
				return cmp.Compare(boolInt(ra.kind == ""), boolInt(rb.kind == ""))
			}
			return ra.originPos.Compare(rb.originPos)
		})
		s.unsorted = false
	}
	return s.order
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// active reports whether the request is a planner request still under way.
func (r *request) active() bool {
	return r.kind != "" && !r.rejected && !r.finished
}

// planJob returns job i as the plan states it, or as released.
func (r *request) planJob(i int) *events.Job {
	if j, ok := r.jobs[i]; ok && j.spec != nil {
		return j.spec
	}
	if r.plan != nil && i < len(r.plan.Jobs) {
		return &r.plan.Jobs[i]
	}
	return nil
}

// instanceOf names the instance job i moves.
func (r *request) instanceOf(i int) string {
	if j := r.planJob(i); j != nil && len(j.Opcodes) > 0 {
		return j.Opcodes[0].Instance
	}
	return ""
}

// Senders are the nodes a job sends from: where its opcodes run.
func Senders(j *events.Job) []string {
	var out []string
	for _, op := range j.Opcodes {
		if op.From != "" && !slices.Contains(out, op.From) {
			out = append(out, op.From)
		}
	}
	return out
}

// running counts the jobs running now across all requests, in total and
// per sending node.
func (s *State) running() (total int, perNode map[string]int) {
	perNode = map[string]int{}
	for _, id := range s.order {
		r := s.requests[id]
		if r.kind != "" && !r.active() {
			continue // closed: every job has a fate
		}
		for i, j := range r.jobs {
			if !j.running() {
				continue
			}
			total++
			if spec := r.planJob(i); spec != nil {
				for _, n := range Senders(spec) {
					perNode[n]++
				}
			}
		}
	}
	return total, perNode
}

// BusyInstances lists instances held by jobs of active requests that have
// no fate yet (released or not), with the request holding each.
func (s *State) BusyInstances() map[string]string {
	busy := map[string]string{}
	for _, id := range s.order {
		r := s.requests[id]
		if !r.active() || r.plan == nil {
			continue
		}
		for i := range r.plan.Jobs {
			if j, ok := r.jobs[i]; ok && j.done() {
				continue
			}
			if in := r.instanceOf(i); in != "" {
				busy[in] = id
			}
		}
	}
	return busy
}

// Active reports whether request id is a planner request still under way.
func (s *State) Active(id string) bool {
	r, ok := s.requests[id]
	return ok && r.active()
}

// Counts says how many requests the fold holds, and how many are active.
func (s *State) Counts() (requests, active int) {
	for _, id := range s.order {
		if s.requests[id].active() {
			active++
		}
	}
	return len(s.order), active
}

// JobStates are the states CountJobs counts jobs in.
var JobStates = []string{"pending", "running", "succeeded", "failed", "cancelled"}

// CountJobs counts the jobs of every plan by state (JobStates).
func (s *State) CountJobs() map[string]float64 {
	counts := map[string]float64{}
	for _, id := range s.order {
		r := s.requests[id]
		if r.kind == "" || r.plan == nil {
			continue
		}
		for i := range r.plan.Jobs {
			j := r.jobs[i]
			switch {
			case j == nil || (!j.released && !j.done()):
				counts["pending"]++
			case j.running():
				counts["running"]++
			case j.status() == "success":
				counts["succeeded"]++
			case j.cancelled != "" || j.ended == "canceled":
				counts["cancelled"]++
			default:
				counts["failed"]++
			}
		}
	}
	return counts
}
