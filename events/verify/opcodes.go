package verify

import "github.com/drovehq/drove/events"

// opKey names one opcode of one job of one request.
type opKey struct {
	request    string
	job, index int
}

// opRun is one opcode's story on the opcodes topic. Its dispatch, starts
// and end are all keyed by the node that runs it, so they share a
// partition and their order here is the log's.
type opRun struct {
	d      *events.OpcodeDispatched
	dRef   Ref
	starts []Ref
	end    *events.OpcodeEnded
	endRef Ref
}

// phaseKey names one phase of a migration: its sequence number.
type phaseKey struct {
	migration string
	seq       int
}

type phaseRun struct {
	d      *events.MigrationPhaseDispatched
	dRef   Ref
	end    *events.MigrationPhaseEnded
	endRef Ref
}

// opcodes checks that every opcode and migration phase ran at most once.
type opcodes struct {
	rep     *Report
	ops     map[opKey]*opRun
	opOrder []opKey
	phases  map[phaseKey]*phaseRun
	// byMigration lists each migration's phase sequence numbers as read.
	byMigration map[string][]int
}

func newOpcodes(rep *Report) *opcodes {
	return &opcodes{rep: rep, ops: map[opKey]*opRun{}, phases: map[phaseKey]*phaseRun{}, byMigration: map[string][]int{}}
}

func (o *opcodes) op(k opKey) *opRun {
	r, ok := o.ops[k]
	if !ok {
		r = &opRun{}
		o.ops[k] = r
		o.opOrder = append(o.opOrder, k)
	}
	return r
}

func (o *opcodes) phase(k phaseKey) *phaseRun {
	r, ok := o.phases[k]
	if !ok {
		r = &phaseRun{}
		o.phases[k] = r
		o.byMigration[k.migration] = append(o.byMigration[k.migration], k.seq)
	}
	return r
}

func (o *opcodes) observe(e *event) {
	switch p := e.p.(type) {
	case events.OpcodeDispatched:
		o.dispatched(p, e)
	case events.OpcodeStarted:
		o.started(p, e)
	case events.OpcodeEnded:
		o.ended(p, e)
	case events.MigrationPhaseDispatched:
		o.phaseDispatched(p, e)
	case events.MigrationPhaseEnded:
		o.phaseEnded(p, e)
	}
}

// dispatched accepts a second dispatch of the same opcode to the same node
// (the executor runs a dispatch once, whatever the number of copies) but
// not one that sends it elsewhere or changes it.
func (o *opcodes) dispatched(p events.OpcodeDispatched, e *event) {
	r := o.op(opKey{p.Request, p.Job, p.Index})
	if r.d != nil {
		if r.d.Node != p.Node || r.d.Opcode != p.Opcode {
			o.rep.add(Once, []Ref{r.dRef, e.ref}, "opcode %d of job %d of %s dispatched twice: to %s, then to %s",
				p.Index, p.Job, p.Request, r.d.Node, p.Node)
		}
		return
	}
	r.d, r.dRef = &p, e.ref
}

// fromDispatch reports a start or an end (what) of opcode k on node that
// was never dispatched, or was dispatched to another node.
func (o *opcodes) fromDispatch(r *opRun, k opKey, node, what string, e *event) {
	switch {
	case r.d == nil:
		o.rep.add(Once, []Ref{e.ref}, "opcode %d of job %d of %s %s on %s but was never dispatched", k.index, k.job, k.request, what, node)
	case r.d.Node != node:
		o.rep.add(Once, []Ref{r.dRef, e.ref}, "opcode %d of job %d of %s dispatched to %s but %s on %s",
			k.index, k.job, k.request, r.d.Node, what, node)
	}
}

func (o *opcodes) started(p events.OpcodeStarted, e *event) {
	k := opKey{p.Request, p.Job, p.Index}
	r := o.op(k)
	o.fromDispatch(r, k, p.Node, "started", e)
	if r.end != nil {
		o.rep.add(Once, []Ref{r.endRef, e.ref}, "opcode %d of job %d of %s started again after it ended %s: it ran twice",
			p.Index, p.Job, p.Request, r.end.Status)
	} else if len(r.starts) > 0 {
		o.rep.Counts.Restarts++ // an executor resuming after it stopped mid-run
	}
	r.starts = append(r.starts, e.ref)
}

func (o *opcodes) ended(p events.OpcodeEnded, e *event) {
	k := opKey{p.Request, p.Job, p.Index}
	r := o.op(k)
	o.fromDispatch(r, k, p.Node, "ended", e)
	if r.end != nil {
		o.rep.add(Once, []Ref{r.endRef, e.ref}, "opcode %d of job %d of %s ended twice (%s, then %s): each run ends once, so it ran twice",
			p.Index, p.Job, p.Request, r.end.Status, p.Status)
		return
	}
	if p.Status == events.JobSuccess && len(r.starts) == 0 {
		o.rep.add(Once, []Ref{e.ref}, "opcode %d of job %d of %s ended success without a start", p.Index, p.Job, p.Request)
	}
	r.end, r.endRef = &p, e.ref
}

func (o *opcodes) phaseDispatched(p events.MigrationPhaseDispatched, e *event) {
	r := o.phase(phaseKey{p.Migration, p.Seq})
	if r.d != nil {
		if *r.d != p {
			o.rep.add(Once, []Ref{r.dRef, e.ref}, "phase %d of migration %s dispatched twice: %s to %s, then %s to %s",
				p.Seq, p.Migration, r.d.Phase, r.d.Node, p.Phase, p.Node)
		}
		return
	}
	r.d, r.dRef = &p, e.ref
}

func (o *opcodes) phaseEnded(p events.MigrationPhaseEnded, e *event) {
	r := o.phase(phaseKey{p.Migration, p.Seq})
	switch {
	case r.d == nil:
		o.rep.add(Once, []Ref{e.ref}, "phase %d (%s) of migration %s ended on %s but was never dispatched", p.Seq, p.Phase, p.Migration, p.Node)
	case r.d.Node != p.Node || r.d.Phase != p.Phase || r.d.Instance != p.Instance:
		o.rep.add(Once, []Ref{r.dRef, e.ref}, "phase %d of migration %s was dispatched as %s of %s to %s but ended as %s of %s on %s",
			p.Seq, p.Migration, r.d.Phase, r.d.Instance, r.d.Node, p.Phase, p.Instance, p.Node)
	}
	if r.end != nil {
		o.rep.add(Once, []Ref{r.endRef, e.ref}, "phase %d (%s) of migration %s ended twice (%s, then %s)",
			p.Seq, p.Phase, p.Migration, r.end.Status, p.Status)
		return
	}
	r.end, r.endRef = &p, e.ref
}

func (o *opcodes) finish() {
	for _, r := range o.ops {
		if r.d != nil {
			o.rep.Counts.Opcodes++
		}
	}
	for _, r := range o.phases {
		if r.d != nil {
			o.rep.Counts.Phases++
		}
	}
}
