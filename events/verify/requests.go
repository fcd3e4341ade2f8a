package verify

import (
	"slices"

	"github.com/drovehq/drove/events"
)

// req is one request's story on drove.requests and drove.plans.
type req struct {
	id        string
	kind      string
	ref       Ref // the event asking for it
	dryRun    bool
	approved  bool
	cancelled bool
	rejected  bool
	finished  *events.RequestFinished
	finRef    Ref
	plans     []events.PlanComputed // in log order: the last is the one run
	parts     events.PlanParts      // a plan in parts, read halfway
	planRefs  []Ref
	last      Ref // the request's last event read
}

type requestBook struct {
	rep   *Report
	reqs  map[string]*req
	order []string
}

func newRequestBook(rep *Report) *requestBook {
	return &requestBook{rep: rep, reqs: map[string]*req{}}
}

func (b *requestBook) get(id string) *req {
	r, ok := b.reqs[id]
	if !ok {
		r = &req{id: id}
		b.reqs[id] = r
		b.order = append(b.order, id)
	}
	return r
}

func (b *requestBook) observe(e *event) {
	switch p := e.p.(type) {
	case events.EvacuationRequested:
		b.origin(p.Request, e, p.DryRun)
	case events.GroupChangeRequested:
		b.origin(p.Request, e, p.DryRun)
	case events.RequestApproved:
		b.get(p.Request).approved = true
	case events.RequestCancelled:
		b.get(p.Request).cancelled = true
	case events.RequestRejected:
		r := b.get(p.Request)
		if r.finished != nil {
			b.rep.add(Requests, []Ref{r.finRef, e.ref}, "request %s rejected after it finished", p.Request)
		}
		r.rejected = true
	case events.RequestFinished:
		r := b.get(p.Request)
		if r.finished != nil || r.rejected {
			b.rep.add(Requests, []Ref{r.last, e.ref}, "request %s ended twice", p.Request)
		} else {
			r.finished, r.finRef = &p, e.ref
		}
	}
	b.get(events.KeyOf(e.p)).last = e.ref // drove.requests is keyed by request
}

func (b *requestBook) origin(id string, e *event, dry bool) {
	r := b.get(id)
	if r.kind != "" {
		return // asked again under the same id: the first one counts
	}
	r.kind, r.ref, r.dryRun = e.env.Type, e.ref, dry
}

// part gathers a plan's parts; it returns the whole plan at its last.
func (b *requestBook) part(p events.PlanComputed) (events.PlanComputed, bool) {
	return b.get(p.Request).parts.Add(p)
}

func (b *requestBook) plan(p events.PlanComputed, e *event) {
	r := b.get(p.Request)
	r.plans = append(r.plans, p)
	r.planRefs = append(r.planRefs, e.ref)
}

// planned reports whether some plan of the request has job j as released.
func (b *requestBook) planned(request string, j events.Job) bool {
	r, ok := b.reqs[request]
	if !ok {
		return false
	}
	for _, p := range r.plans {
		if j.Index >= 0 && j.Index < len(p.Jobs) && sameJob(p.Jobs[j.Index], j) {
			return true
		}
	}
	return false
}

// sameJob compares jobs as their JSON says, an empty list and none alike.
func sameJob(a, b events.Job) bool {
	if a.Index != b.Index || !slices.Equal(a.Opcodes, b.Opcodes) || len(a.Depends) != len(b.Depends) {
		return false
	}
	for i := range a.Depends {
		if a.Depends[i].Job != b.Depends[i].Job || !slices.Equal(a.Depends[i].Statuses, b.Depends[i].Statuses) {
			return false
		}
	}
	return true
}

// finish checks that every request ended and that each finished one's
// result is true of the log.
func (b *requestBook) finish(opts Options, inv *inventory, jobs *jobBook) {
	c := &b.rep.Counts
	for _, id := range b.order {
		r := b.reqs[id]
		if r.kind == "" {
			if r.finished != nil || r.rejected || len(r.plans) > 0 {
				b.rep.add(Requests, []Ref{r.last}, "request %s has a plan or an end, but nobody asked for it", id)
			}
			continue
		}
		c.Requests++
		switch {
		case r.finished != nil:
			c.Finished++
			b.checkResult(r, inv, jobs)
		case r.rejected:
			c.Rejected++
		case r.dryRun && !r.approved && !r.cancelled && len(r.plans) > 0:
			c.AwaitingApp++ // nothing runs until an approval
		default:
			c.Open++
			if !opts.AllowOpen {
				b.rep.add(Requests, []Ref{r.ref, r.last}, "request %s never ended", id)
			}
		}
	}
}

// checkResult compares a finished request's result with its last plan, its
// jobs and the placements it made.
func (b *requestBook) checkResult(r *req, inv *inventory, jobs *jobBook) {
	if len(r.plans) == 0 {
		b.rep.add(Requests, []Ref{r.finRef}, "request %s finished without a plan", r.id)
		return
	}
	pl, plRef := r.plans[len(r.plans)-1], r.planRefs[len(r.planRefs)-1]
	want := map[string]bool{}
	for _, m := range pl.Moved {
		want[m.Instance] = true
	}
	for _, f := range pl.Failed {
		want[f.Instance] = true
	}
	var wantOrder []string
	for name := range want {
		wantOrder = append(wantOrder, name)
	}
	slices.Sort(wantOrder)
	got := map[string]bool{}
	for _, m := range r.finished.Moved {
		got[m.Instance] = true
		b.checkMoved(r, m, inv, jobJudge(r.id, pl, jobs))
	}
	for _, f := range r.finished.Failed {
		got[f.Instance] = true
		b.checkFailed(r, f.Instance, inv, jobJudge(r.id, pl, jobs))
	}
	for _, name := range wantOrder {
		if !got[name] {
			b.rep.add(Requests, []Ref{plRef, r.finRef}, "request %s's plan has instance %s, its result does not", r.id, name)
		}
	}
	for _, name := range resultNames(r.finished) {
		if !want[name] {
			b.rep.add(Requests, []Ref{plRef, r.finRef}, "request %s's result names instance %s, its plan does not", r.id, name)
		}
	}
}

// judge tells how the jobs of the request that touch an instance went.
type judge func(instance string) (released, allSucceeded bool)

func jobJudge(request string, pl events.PlanComputed, jobs *jobBook) judge {
	return func(instance string) (bool, bool) {
		released, ok := false, true
		for _, j := range pl.Jobs {
			if !slices.ContainsFunc(j.Opcodes, func(o events.Opcode) bool { return o.Instance == instance }) {
				continue
			}
			run := jobs.jobs[jobKey{request, j.Index}]
			if run != nil && run.spec != nil {
				released = true
			}
			if run == nil || run.status != events.JobSuccess {
				ok = false
			}
		}
		return released, ok
	}
}

func (b *requestBook) checkMoved(r *req, m events.Moved, inv *inventory, jobsOf judge) {
	if _, ok := jobsOf(m.Instance); !ok {
		b.rep.add(Requests, []Ref{r.finRef}, "request %s says %s moved, but not every job moving it succeeded", r.id, m.Instance)
	}
	in := inv.instances[m.Instance]
	var pl placement
	var placed bool
	if in != nil {
		pl, placed = in.byRequest[r.id]
	}
	if !placed {
		b.rep.add(Requests, []Ref{r.finRef}, "request %s says %s moved to %v, but the request never placed it", r.id, m.Instance, m.Nodes)
		return
	}
	at := []string{pl.primary}
	if pl.secondary != "" {
		at = append(at, pl.secondary)
	}
	if !slices.Equal(at, m.Nodes) || pl.group != m.Group {
		b.rep.add(Requests, []Ref{pl.ref, r.finRef}, "request %s says %s moved to %v in %s, but it placed it on %v in %s",
			r.id, m.Instance, m.Nodes, m.Group, at, pl.group)
	}
}

// checkFailed: an instance none of whose jobs ran cannot have been moved.
func (b *requestBook) checkFailed(r *req, name string, inv *inventory, jobsOf judge) {
	released, _ := jobsOf(name)
	in := inv.instances[name]
	if in == nil || released {
		return
	}
	if pl, placed := in.byRequest[r.id]; placed {
		b.rep.add(Requests, []Ref{pl.ref, r.finRef}, "request %s says %s did not move and none of its jobs ran, but the request placed it on %s",
			r.id, name, nodes(pl.primary, pl.secondary))
	}
}

func resultNames(f *events.RequestFinished) []string {
	var out []string
	for _, m := range f.Moved {
		out = append(out, m.Instance)
	}
	for _, x := range f.Failed {
		out = append(out, x.Instance)
	}
	return out
}
