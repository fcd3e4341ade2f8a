package verify

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/drovehq/drove/events"
)

// Options adjust what Check accepts.
type Options struct {
	// AllowOpen accepts requests and migrations still under way, for
	// checking the log of a running system; without it every request
	// must have ended and every migration's record must have answered
	// its last phase.
	AllowOpen bool
}

// event is one decoded event at its place in the log.
type event struct {
	ref Ref
	env events.Envelope
	p   events.Payload
}

// Check folds recs, the records of any number of topics and partitions,
// and reports every violation it finds. Records of one partition must be
// given in offset order or carry their offsets; Check never reorders a
// partition (see the package doc for how partitions are interleaved).
// It never panics on any input: events it cannot decode are reported.
func Check(recs []Record, opts Options) *Report {
	rep := &Report{}
	c := newChecker(rep, opts)
	for _, e := range merge(decode(recs, rep)) {
		c.observe(e)
	}
	c.finish()
	rep.close()
	return rep
}

// decode turns records into events, dropping second deliveries of one
// event id and reporting payloads that do not decode.
func decode(recs []Record, rep *Report) []*event {
	seen := map[string]*event{}
	out := make([]*event, 0, len(recs))
	for _, r := range recs {
		ref := Ref{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			ID: r.Event.ID, Type: r.Event.Type, Time: r.Event.Time}
		if prev, ok := seen[r.Event.ID]; ok && r.Event.ID != "" {
			rep.Counts.Duplicates++
			if prev.env.Type != r.Event.Type || !bytes.Equal(prev.env.Payload, r.Event.Payload) {
				rep.add(Decoding, []Ref{prev.ref, ref}, "two different events share the id %s", r.Event.ID)
			}
			continue
		}
		p, err := r.Event.DecodePayload()
		if err != nil {
			rep.add(Decoding, []Ref{ref}, "payload does not decode: %v", err)
			continue
		}
		e := &event{ref: ref, env: r.Event, p: p}
		seen[r.Event.ID] = e
		out = append(out, e)
	}
	rep.Counts.Events = len(out)
	return out
}

// merge orders events: each partition's by offset, partitions interleaved
// by event time (then topic, partition, offset, so the order is the same
// on every run). A partition's events are never reordered, even when a
// producer's clock went back.
func merge(evs []*event) []*event {
	type part struct {
		topic string
		p     int32
	}
	byPart := map[part][]*event{}
	var parts []part
	for _, e := range evs {
		k := part{e.ref.Topic, e.ref.Partition}
		if _, ok := byPart[k]; !ok {
			parts = append(parts, k)
		}
		byPart[k] = append(byPart[k], e)
	}
	for _, k := range parts {
		slices.SortStableFunc(byPart[k], func(a, b *event) int { return cmp.Compare(a.ref.Offset, b.ref.Offset) })
	}
	out := make([]*event, 0, len(evs))
	next := make([]int, len(parts))
	for len(out) < len(evs) {
		best := -1
		for i, k := range parts {
			if next[i] == len(byPart[k]) {
				continue
			}
			if best < 0 || before(byPart[k][next[i]], byPart[parts[best]][next[best]]) {
				best = i
			}
		}
		out = append(out, byPart[parts[best]][next[best]])
		next[best]++
	}
	return out
}

func before(a, b *event) bool {
	return cmp.Or(a.env.Time.Compare(b.env.Time), cmp.Compare(a.ref.Topic, b.ref.Topic),
		cmp.Compare(a.ref.Partition, b.ref.Partition), cmp.Compare(a.ref.Offset, b.ref.Offset)) < 0
}

// checker holds the fold of every invariant's state.
type checker struct {
	rep  *Report
	opts Options
	inv  *inventory
	ops  *opcodes
	jobs *jobBook
	reqs *requestBook
	migs *migrationBook
	fen  *fencing
}

func newChecker(rep *Report, opts Options) *checker {
	c := &checker{rep: rep, opts: opts}
	c.inv = newInventory(rep)
	c.ops = newOpcodes(rep)
	c.jobs = newJobBook(rep)
	c.reqs = newRequestBook(rep)
	c.migs = newMigrationBook(rep)
	c.fen = newFencing(rep)
	return c
}

// observe folds one event into every invariant that reads it.
func (c *checker) observe(e *event) {
	switch p := e.p.(type) {
	case events.GroupDeclared:
	case events.NodeAnnounced:
		c.inv.node(events.NodeUpdated(p), e)
		c.fen.node(events.NodeUpdated(p), e)
	case events.NodeUpdated:
		c.inv.node(p, e)
		c.fen.node(p, e)
	case events.InstanceDeclared:
		c.inv.declare(p, e)
	case events.InstancePlaced:
		c.inv.place(p, e)
	case events.MoveStatusReported:
		c.inv.status(p, e)
	case events.EvacuationRequested, events.GroupChangeRequested, events.RequestApproved,
		events.RequestCancelled, events.RequestRejected, events.RequestFinished:
		c.reqs.observe(e)
	case events.PlanComputed:
		// A plan in parts is judged whole, at its last part.
		if whole, ok := c.reqs.part(p); ok {
			c.reqs.plan(whole, e)
			c.inv.checkPlan(whole, e)
		}
	case events.JobReleased:
		c.jobs.released(p, e)
	case events.JobCancelled:
		c.jobs.cancelled(p, e)
	case events.JobEnded:
		c.jobs.ended(p, e)
	case events.OpcodeDispatched, events.OpcodeStarted, events.OpcodeEnded,
		events.MigrationPhaseDispatched, events.MigrationPhaseEnded:
		c.ops.observe(e)
		c.fen.observe(e)
	case events.MigrationStateChanged:
		c.migs.record(p, e)
	}
}

// finish runs the checks that compare final facts across topics.
func (c *checker) finish() {
	c.inv.finish()
	c.ops.finish()
	c.jobs.finish(c.reqs, c.ops)
	c.reqs.finish(c.opts, c.inv, c.jobs)
	c.migs.finish(c.opts, c.inv, c.ops)
}
