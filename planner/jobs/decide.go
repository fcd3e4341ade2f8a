package jobs

import (
	"fmt"
	"strings"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/inventory"
)

// A pass decides what one request needs now, from the state alone. It is
// level-triggered on purpose: the same pass runs after an event is handled
// live and after a restart's replay, so a decision lost in a crash (its
// transaction aborted) is simply taken again, and one that reached the log
// is in the replayed state and not taken twice.
//
// Each decision is applied to the state as soon as it is made, so later
// decisions of the pass see it (a released job takes a running slot), and
// all of a pass's events are appended in one transaction.
type pass struct {
	env     Env
	st      *State
	r       *request
	trigger events.Envelope
	out     Decision
}

// Env is what a pass reads besides the fold of requests, and where its
// decisions go.
type Env struct {
	// Inv is the inventory the plans are computed on.
	Inv *inventory.Inventory
	// Apply folds one decision into the service's whole state at once,
	// so the pass's later decisions see it (a released job takes a
	// running slot, a drained node is drained).
	Apply func(events.Envelope, events.Payload)
	// Options tune plans; a request's own limits override them.
	Options planner.Options
	// MaxRunningMoves bounds the jobs running at once, all requests
	// together.
	MaxRunningMoves int
	// AutoMovesPerNode lets the queue choose each node's concurrency from
	// its link (Limits.PerNode 0) instead of Options.MaxMovesPerNode; a
	// request's own max_moves_per_node still caps it.
	AutoMovesPerNode bool
	// IndexOrder releases jobs in plan order, without estimates, and plans
	// with the per-node limit as dependencies: Drove's rules before
	// release aimed at the makespan (the benchmark's baseline).
	IndexOrder bool
	// Producer names the service in the events it writes.
	Producer string
	// PlanTook, if not nil, is told how long each planner.Compute took.
	PlanTook func(time.Duration)
	// Fits, if not nil, says whether an event fits in one record of the
	// log (kafka.Config.Fits). A plan is cut in parts of PlanPartBytes,
	// and a request whose decision still does not fit is rejected with
	// that reason instead of being appended, so it cannot block others.
	Fits func(events.Envelope) error
	// PlanPartBytes bounds the payload of one part of a plan (see
	// events.SplitPlan). Default 1 MiB.
	PlanPartBytes int
	// Migrating, if not nil, names the active per-instance migration of
	// an instance ("" if none): a request that would move an instance a
	// migration is moving is rejected, as one that would move an instance
	// of another active request is, or the two would move it at once.
	Migrating func(instance string) string
	// Migrations, if not nil, lists by instance the nodes per-instance
	// migrations still need room on (migration.State.InFlight): a plan
	// leaves it free (reserve.go).
	Migrations func() map[string][]string
}

// Decision is what one pass decided for one request.
type Decision struct {
	// Events are the decisions, in order, to append in one transaction.
	Events []events.Envelope
	// Outcome is set when the pass closed the request: completed,
	// partial, cancelled or rejected.
	Outcome string
}

// Decide takes every decision request id needs now, applying each to the
// state through env.Apply as it is taken.
func Decide(env Env, st *State, id string) Decision {
	r, ok := st.requests[id]
	if !ok {
		return Decision{}
	}
	p := &pass{env: env, st: st, r: r, trigger: r.last}
	p.run()
	return p.out
}

// Fail closes request id for reason, when a decision of its could not be
// appended (the log refused it for good): see pass.fail. The service calls
// it on a state rebuilt from the log, so nothing of the refused decision
// is in it.
func Fail(env Env, st *State, id, reason string) Decision {
	r, ok := st.requests[id]
	if !ok || !r.active() {
		return Decision{}
	}
	p := &pass{env: env, st: st, r: r, trigger: r.last}
	p.fail(reason)
	return p.out
}

// emit records one decision: an event caused by the trigger (or by cause,
// when given), carrying the planner's reason for this request with the
// requester's own reason kept in it.
func (p *pass) emit(payload events.Payload, why string, cause ...events.Envelope) {
	p.take(p.event(payload, why+"; "+p.r.originWhy(), cause...))
}

// decision is an event built and not yet taken.
type decision struct {
	env     events.Envelope
	payload events.Payload
}

// event builds one decision without taking it.
func (p *pass) event(payload events.Payload, why string, cause ...events.Envelope) decision {
	c := p.trigger
	if len(cause) > 0 && cause[0].ID != "" {
		c = cause[0]
	}
	ev := events.New(payload,
		events.CausedBy(c),
		events.WithReason(events.Reason{Actor: "planner", Why: why, RequestID: p.r.id}),
		events.WithProducer(p.env.Producer),
	)
	return decision{ev, payload}
}

// take adds a decision to the pass's and applies it at once.
func (p *pass) take(d decision) {
	p.out.Events = append(p.out.Events, d.env)
	p.env.Apply(d.env, d.payload)
}

// fits reports the first decision that cannot be appended, nil if all can.
func (p *pass) fits(ds []decision) error {
	if p.env.Fits == nil {
		return nil
	}
	for _, d := range ds {
		if err := p.env.Fits(d.env); err != nil {
			return err
		}
	}
	return nil
}

// originWhy is the requester's word, kept on every event the request
// causes: "evacuation of n1 (all) requested by operator:alice: disk swap".
func (r *request) originWhy() string {
	who := fmt.Sprintf("requested by %s: %s", r.origin.Reason.Actor, r.origin.Reason.Why)
	switch r.kind {
	case events.TypeEvacuationRequested:
		dry := ""
		if r.evac.DryRun {
			dry = ", dry run"
		}
		return fmt.Sprintf("evacuation of %s (%s%s) %s", list(r.evac.Nodes), r.evac.Mode, dry, who)
	case events.TypeGroupChangeRequested:
		dry := ""
		if r.change.DryRun {
			dry = " (dry run)"
		}
		return fmt.Sprintf("group change of %s%s %s", list(r.change.Instances), dry, who)
	}
	return who
}

// list names a few of names and counts the rest: every event of a request
// carries its origin, and a request of 20,000 instances would otherwise
// write their names into each one.
func list(names []string) string {
	const shown = 5
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}

// run takes every decision the request needs now.
func (p *pass) run() {
	r := p.r
	if !r.active() {
		return
	}
	if r.plan == nil {
		if r.cancelled != nil {
			p.reject("cancelled before it was planned", *r.cancelled)
			return
		}
		if !p.plan(false) {
			return
		}
	}
	if r.dryRun() && r.approved == nil && r.cancelled == nil {
		return // a dry run waits for RequestApproved
	}
	if r.dryRun() && r.approved != nil && r.cancelled == nil && !r.refreshed && !r.anyFate() {
		r.refreshed = true
		p.trigger = *r.approved
		if !p.plan(true) {
			return
		}
	}
	for i := range r.plan.Jobs {
		if j := r.jobs[i]; j != nil && j.running() {
			p.advance(i)
		}
	}
	p.release()
	p.finish()
}

// anyFate reports whether any job of the plan was released or given a fate.
func (r *request) anyFate() bool {
	for _, j := range r.jobs {
		if j.released || j.done() {
			return true
		}
	}
	return false
}
