package service

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner"
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
	svc     *Service
	st      *state
	r       *request
	trigger events.Envelope
	msgs    []kafka.Message
	outcome string // set when the pass closes the request
}

// emit records one decision: an event caused by the trigger (or by cause,
// when given), carrying the planner's reason for this request with the
// requester's own reason kept in it.
func (p *pass) emit(payload events.Payload, why string, cause ...events.Envelope) {
	c := p.trigger
	if len(cause) > 0 && cause[0].ID != "" {
		c = cause[0]
	}
	env := events.New(payload,
		events.CausedBy(c),
		events.WithReason(events.Reason{Actor: "planner", Why: why + "; " + p.r.originWhy(), RequestID: p.r.id}),
		events.WithProducer(p.svc.cfg.Producer),
	)
	topic, _ := events.TopicOf(env.Type) // payloads are the package's own types: always known
	p.msgs = append(p.msgs, kafka.Message{Topic: topic, Event: env})
	p.st.apply(env, payload, unread(env))
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
		return fmt.Sprintf("evacuation of %s (%s%s) %s", strings.Join(r.evac.Nodes, ", "), r.evac.Mode, dry, who)
	case events.TypeGroupChangeRequested:
		dry := ""
		if r.change.DryRun {
			dry = " (dry run)"
		}
		return fmt.Sprintf("group change of %s%s %s", strings.Join(r.change.Instances, ", "), dry, who)
	}
	return who
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

func (p *pass) reject(reason string, cause ...events.Envelope) {
	p.emit(events.RequestRejected{Request: p.r.id, Reason: reason}, "request rejected: "+reason, cause...)
	p.outcome = "rejected"
}

// plan validates the request against the state and computes its plan. The
// first time (refresh false) it drains the evacuated nodes and appends the
// plan; on approval (refresh true) it appends a new plan only if a decision
// changed. It reports whether the request goes on.
func (p *pass) plan(refresh bool) bool {
	r, inv := p.r, p.st.inv
	instances, reason := p.validate()
	if reason != "" {
		p.reject(reason)
		return false
	}
	c := inv.cluster()
	var drain []string
	if r.kind == events.TypeEvacuationRequested {
		for _, n := range r.evac.Nodes {
			if i := c.NodeIndex(n); i >= 0 && !c.Nodes[i].Drained {
				c.Nodes[i].Drained = true
				if !contains(drain, n) {
					drain = append(drain, n)
				}
			}
		}
	}
	req := planner.Request{Instances: instances}
	opts := p.svc.cfg.Options
	switch r.kind {
	case events.TypeEvacuationRequested:
		req.Kind, req.Mode, req.EvacuatedNodes = planner.NodeEvacuate, planner.EvacMode(r.evac.Mode), r.evac.Nodes
		if r.evac.MaxMovesPerNode > 0 {
			opts.MaxMovesPerNode = r.evac.MaxMovesPerNode
		}
		opts.IgnoreSoftErrors = opts.IgnoreSoftErrors || r.evac.IgnoreSoftErrors
	case events.TypeGroupChangeRequested:
		req.Kind, req.TargetGroups = planner.ChangeGroup, r.change.TargetGroups
	}
	start := time.Now()
	plan, err := planner.Compute(c, req, opts)
	p.svc.m.planSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		p.reject("cannot plan: " + err.Error())
		return false
	}
	for _, n := range drain {
		st := inv.nodeState(n)
		st.Drained = true
		p.emit(st, fmt.Sprintf("drain node %s: it is being evacuated", n))
	}
	pc := planEvent(r.id, plan)
	if refresh {
		if samePlan(&pc, r.plan) {
			return true
		}
		p.emit(pc, fmt.Sprintf("plan refreshed on approval: the inventory changed since the dry run (%d moved, %d failed, %d jobs)",
			len(pc.Moved), len(pc.Failed), len(pc.Jobs)))
		return true
	}
	p.emit(pc, fmt.Sprintf("plan computed: %d moved, %d failed, %d jobs", len(pc.Moved), len(pc.Failed), len(pc.Jobs)))
	return true
}

// validate checks the request against the state and lists the instances
// it moves; a non-empty reason rejects it.
func (p *pass) validate() (instances []string, reason string) {
	r, inv := p.r, p.st.inv
	switch r.kind {
	case events.TypeEvacuationRequested:
		for _, n := range r.evac.Nodes {
			if _, ok := inv.nodes[n]; !ok {
				return nil, fmt.Sprintf("unknown node %q", n)
			}
		}
		for _, name := range inv.instanceOrder {
			in := inv.instances[name]
			pri, sec := contains(r.evac.Nodes, in.PrimaryNode), contains(r.evac.Nodes, in.SecondaryNode)
			switch r.evac.Mode {
			case events.EvacPrimaryOnly:
				sec = false
			case events.EvacSecondaryOnly:
				pri = false
			}
			if pri || sec {
				instances = append(instances, name)
			}
		}
	case events.TypeGroupChangeRequested:
		for _, name := range r.change.Instances {
			if _, ok := inv.instances[name]; !ok {
				return nil, fmt.Sprintf("unknown instance %q", name)
			}
		}
		instances = r.change.Instances
	}
	busy := p.st.busyInstances()
	for _, in := range instances {
		if other, ok := busy[in]; ok && other != r.id {
			return nil, fmt.Sprintf("instance %q is already being moved by active request %s", in, other)
		}
	}
	return instances, ""
}

// advance moves a running job on: dispatch its next opcode, ask its
// executor to cancel the running one, or end the job.
func (p *pass) advance(i int) {
	r := p.r
	j, spec := r.jobs[i], r.planJob(i)
	var prev events.Envelope // the end of the opcode before, the natural cause
	for k, op := range spec.Opcodes {
		o := j.ops[k]
		switch {
		case o != nil && o.ended == events.JobSuccess:
			prev = o.endEnv
			continue
		case o != nil && o.ended != "":
			msg := o.endErr
			if msg == "" {
				msg = fmt.Sprintf("opcode %d (%s) ended %s", k, op.OpID, o.ended)
			}
			p.emit(events.JobEnded{Request: r.id, Job: i, Status: o.ended, Error: msg},
				fmt.Sprintf("job %d ended %s: opcode %d ended %s", i, o.ended, k, o.ended), o.endEnv)
		case o == nil || o.dispatched == "":
			if r.cancelled != nil {
				p.emit(events.JobEnded{Request: r.id, Job: i, Status: events.JobCanceled, Error: "request cancelled"},
					fmt.Sprintf("job %d ended canceled before opcode %d: the request was cancelled", i, k), *r.cancelled)
				return
			}
			node := op.From
			if op.IgnoreConsistency && op.To != "" {
				// A failover away from an offline primary: nobody answers
				// there, so the target starts the instance from its replica.
				node = op.To
			}
			if node == "" { // the planner names it; an instance's primary runs it otherwise
				if in := p.st.inv.instances[op.Instance]; in != nil {
					node = in.PrimaryNode
				}
			}
			p.emit(events.OpcodeDispatched{Request: r.id, Job: i, Index: k, Node: node, Opcode: op},
				fmt.Sprintf("dispatch opcode %d of job %d (%s of %s) to %s", k, i, op.OpID, op.Instance, node), prev)
		default: // dispatched and not ended
			if r.cancelled != nil && !o.cancelSent {
				p.emit(events.OpcodeCancelled{Request: r.id, Job: i, Index: k, Node: o.dispatched,
					Reason: cancelReason(r)},
					fmt.Sprintf("cancel opcode %d of job %d on %s: the request was cancelled", k, i, o.dispatched), *r.cancelled)
			}
		}
		return
	}
	p.emit(events.JobEnded{Request: r.id, Job: i, Status: events.JobSuccess},
		fmt.Sprintf("job %d ended success: all %d opcodes succeeded", i, len(spec.Opcodes)), prev)
}

func cancelReason(r *request) string {
	return fmt.Sprintf("request cancelled by %s: %s", r.cancelled.Reason.Actor, r.cancelled.Reason.Why)
}

// release gives every job without a fate one: cancelled if the request is,
// or if a dependency ended in a status it does not accept (Ganeti: it can
// never run); released if every dependency ended as it accepts and the
// running limits allow. Dependencies point at earlier jobs, so one pass in
// index order cascades cancellations.
func (p *pass) release() {
	r := p.r
	total, perNode := p.st.running()
	limit := p.svc.cfg.Options.MaxMovesPerNode
	if r.kind == events.TypeEvacuationRequested && r.evac.MaxMovesPerNode > 0 {
		limit = r.evac.MaxMovesPerNode
	}
	for i := range r.plan.Jobs {
		if j := r.jobs[i]; j != nil && (j.released || j.done()) {
			continue
		}
		spec := &r.plan.Jobs[i]
		if r.cancelled != nil {
			p.emit(events.JobCancelled{Request: r.id, Job: i, Reason: "request cancelled"},
				fmt.Sprintf("job %d cancelled before it ran: %s", i, cancelReason(r)), *r.cancelled)
			continue
		}
		ready, dead := true, false
		for _, d := range spec.Depends {
			k := i + d.Job
			dj := r.jobs[k]
			if dj == nil || !dj.done() {
				ready = false
				continue
			}
			if len(d.Statuses) > 0 && !slices.Contains(d.Statuses, dj.status()) {
				reason := fmt.Sprintf("dependency job %d ended %s", k, dj.status())
				p.emit(events.JobCancelled{Request: r.id, Job: i, Reason: reason},
					fmt.Sprintf("job %d can never run: %s, not %v", i, reason, d.Statuses), dj.endEnv)
				dead = true
				break
			}
		}
		if dead || !ready {
			continue
		}
		from := senders(spec)
		if total >= p.svc.cfg.MaxRunningMoves || slices.ContainsFunc(from, func(n string) bool { return perNode[n] >= limit }) {
			continue // waits for a running job to end
		}
		p.emit(events.JobReleased{Request: r.id, Job: *spec},
			fmt.Sprintf("release job %d (%s): its dependencies are met", i, r.instanceOf(i)))
		total++
		for _, n := range from {
			perNode[n]++
		}
		p.advance(i)
	}
}

// finish closes the request once every job has a fate: moved lists the
// instances whose job succeeded (where the plan put them), failed the
// plan's failures and every instance whose job did not succeed, with why.
func (p *pass) finish() {
	r := p.r
	for i := range r.plan.Jobs {
		if j := r.jobs[i]; j == nil || !j.done() {
			return
		}
	}
	out := events.RequestFinished{Request: r.id, Moved: []events.Moved{}, Failed: []events.Failed{}}
	out.Failed = append(out.Failed, r.plan.Failed...)
	for i := range r.plan.Jobs {
		j, name := r.jobs[i], r.instanceOf(i)
		switch {
		case j.status() == events.JobSuccess:
			for _, m := range r.plan.Moved {
				if m.Instance == name {
					out.Moved = append(out.Moved, m)
				}
			}
		case j.cancelled != "":
			out.Failed = append(out.Failed, events.Failed{Instance: name, Reason: "job cancelled: " + j.cancelled})
		case j.ended == events.JobCanceled:
			out.Failed = append(out.Failed, events.Failed{Instance: name, Reason: "job canceled: " + j.endErr})
		default:
			out.Failed = append(out.Failed, events.Failed{Instance: name, Reason: "job failed: " + j.endErr})
		}
	}
	switch {
	case r.cancelled != nil:
		p.outcome = "cancelled"
	case len(out.Failed) == 0:
		p.outcome = "completed"
	default:
		p.outcome = "partial"
	}
	p.emit(events.RequestFinished{Request: r.id, Moved: out.Moved, Failed: out.Failed},
		fmt.Sprintf("request finished: %d moved, %d failed", len(out.Moved), len(out.Failed)))
}
