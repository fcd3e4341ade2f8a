package verify

import (
	"slices"

	"github.com/drovehq/drove/events"
)

// jobKey names one job of one request.
type jobKey struct {
	request string
	index   int
}

// jobRun is one job's story on drove.jobs, keyed by request: a request's
// releases, cancellations and ends share a partition, so whether a
// dependency had ended when a job was released is read exactly.
type jobRun struct {
	spec      *events.Job
	relRef    Ref
	status    events.JobStatus // how it ended, or canceled when cancelled unreleased
	endRef    Ref
	cancelled bool
}

func (j *jobRun) done() bool { return j.status != "" }

type jobBook struct {
	rep   *Report
	jobs  map[jobKey]*jobRun
	order []jobKey
}

func newJobBook(rep *Report) *jobBook {
	return &jobBook{rep: rep, jobs: map[jobKey]*jobRun{}}
}

func (b *jobBook) job(k jobKey) *jobRun {
	j, ok := b.jobs[k]
	if !ok {
		j = &jobRun{}
		b.jobs[k] = j
		b.order = append(b.order, k)
	}
	return j
}

// released checks Ganeti's depends: job index+d.Job must have ended (a job
// cancelled before it ran ended "canceled") in one of d.Statuses, or in
// any status when the list is empty.
func (b *jobBook) released(p events.JobReleased, e *event) {
	b.rep.Counts.Releases++
	i := p.Job.Index
	j := b.job(jobKey{p.Request, i})
	switch {
	case j.spec != nil:
		b.rep.add(Once, []Ref{j.relRef, e.ref}, "job %d of %s released twice", i, p.Request)
	case j.done():
		b.rep.add(Dependencies, []Ref{j.endRef, e.ref}, "job %d of %s released after it had ended %s", i, p.Request, j.status)
	}
	for _, d := range p.Job.Depends {
		b.rep.Counts.Dependencies++
		k := i + d.Job
		if d.Job >= 0 || k < 0 {
			b.rep.add(Dependencies, []Ref{e.ref}, "job %d of %s depends on job %d (relative %d), which is not an earlier job",
				i, p.Request, k, d.Job)
			continue
		}
		dep, ok := b.jobs[jobKey{p.Request, k}]
		switch {
		case !ok || !dep.done():
			b.rep.add(Dependencies, []Ref{e.ref}, "job %d of %s released before job %d, which it depends on, ended",
				i, p.Request, k)
		case len(d.Statuses) > 0 && !slices.Contains(d.Statuses, dep.status):
			b.rep.add(Dependencies, []Ref{dep.endRef, e.ref}, "job %d of %s released although job %d ended %s and it accepts only %v",
				i, p.Request, k, dep.status, d.Statuses)
		}
	}
	if j.spec == nil {
		j.spec, j.relRef = &p.Job, e.ref
	}
}

func (b *jobBook) cancelled(p events.JobCancelled, e *event) {
	j := b.job(jobKey{p.Request, p.Job})
	if j.spec != nil || j.done() {
		return // a released or ended job is not cancelled by this; its end says how it went
	}
	j.status, j.endRef, j.cancelled = events.JobCanceled, e.ref, true
}

func (b *jobBook) ended(p events.JobEnded, e *event) {
	j := b.job(jobKey{p.Request, p.Job})
	switch {
	case j.spec == nil:
		b.rep.add(Dependencies, []Ref{e.ref}, "job %d of %s ended %s but was never released", p.Job, p.Request, p.Status)
	case j.done():
		b.rep.add(Once, []Ref{j.endRef, e.ref}, "job %d of %s ended twice (%s, then %s)", p.Job, p.Request, j.status, p.Status)
		return
	}
	j.status, j.endRef, j.cancelled = p.Status, e.ref, false
}

// finish checks, on the final facts, that every released job is a job of
// one of its request's plans and every dispatched opcode is its released
// job's: a release that dropped a dependency, or an opcode nobody planned,
// would slip past the checks above.
func (b *jobBook) finish(reqs *requestBook, ops *opcodes) {
	b.rep.Counts.Jobs = len(b.jobs)
	for _, k := range b.order {
		j := b.jobs[k]
		if j.spec == nil {
			continue
		}
		if !reqs.planned(k.request, *j.spec) {
			b.rep.add(Dependencies, []Ref{j.relRef}, "job %d of %s was released as no plan of the request has it", k.index, k.request)
		}
	}
	for _, k := range ops.opOrder {
		r := ops.ops[k]
		if r.d == nil {
			continue
		}
		j, ok := b.jobs[jobKey{k.request, k.job}]
		switch {
		case !ok || j.spec == nil:
			b.rep.add(Dependencies, []Ref{r.dRef}, "opcode %d of job %d of %s dispatched, but the job was never released",
				k.index, k.job, k.request)
		case k.index < 0 || k.index >= len(j.spec.Opcodes) || j.spec.Opcodes[k.index] != r.d.Opcode:
			b.rep.add(Dependencies, []Ref{j.relRef, r.dRef}, "opcode %d of job %d of %s dispatched is not the released job's opcode %d",
				k.index, k.job, k.request, k.index)
		}
	}
}
