package jobs

import (
	"fmt"

	"github.com/drovehq/drove/events"
)

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
	moved := map[string][]events.Moved{} // by instance: a plan may have thousands
	for _, m := range r.plan.Moved {
		moved[m.Instance] = append(moved[m.Instance], m)
	}
	for i := range r.plan.Jobs {
		j, name := r.jobs[i], r.instanceOf(i)
		switch {
		case j.status() == events.JobSuccess:
			out.Moved = append(out.Moved, moved[name]...)
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
		p.out.Outcome = "cancelled"
	case len(out.Failed) == 0:
		p.out.Outcome = "completed"
	default:
		p.out.Outcome = "partial"
	}
	p.emit(events.RequestFinished{Request: r.id, Moved: out.Moved, Failed: out.Failed},
		fmt.Sprintf("request finished: %d moved, %d failed", len(out.Moved), len(out.Failed)))
}
