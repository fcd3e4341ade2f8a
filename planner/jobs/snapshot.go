package jobs

import (
	"encoding/json"
	"slices"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/inventory"
)

// A closed request (finished or rejected) leaves the fold at once: no
// later decision reads it, and keeping it would make every pass and every
// snapshot grow with history. Its events read after that (the service
// reading back its own, or a replay reading another topic later) make a
// stub, a request whose own event was never read; DropStubs clears those
// once the replay is over, when no stub can be a request still to come.

// prune removes request id from the fold.
func (s *State) prune(id string) {
	delete(s.requests, id)
	s.order = slices.DeleteFunc(s.order, func(o string) bool { return o == id })
}

// DropStubs removes requests whose own event was never read. Call it only
// when the log was read to its end: live, every request's event is read
// before anything about it is written, so a stub then is what a closed
// request left behind.
func (s *State) DropStubs() {
	s.order = slices.DeleteFunc(s.order, func(id string) bool {
		if s.requests[id].kind == "" {
			delete(s.requests, id)
			return true
		}
		return false
	})
}

// requestImage is a request as a snapshot keeps it. Refreshed is left
// out: it is not in the log either (see request.refreshed).
type requestImage struct {
	ID        string                      `json:"id"`
	Kind      string                      `json:"kind"`
	Origin    events.Envelope             `json:"origin"`
	OriginPos inventory.Pos               `json:"origin_pos"`
	Evac      events.EvacuationRequested  `json:"evac"`
	Change    events.GroupChangeRequested `json:"change"`
	Approved  *events.Envelope            `json:"approved,omitempty"`
	Cancelled *events.Envelope            `json:"cancelled,omitempty"`
	Rejected  bool                        `json:"rejected,omitempty"`
	Finished  bool                        `json:"finished,omitempty"`
	Plan      *events.PlanComputed        `json:"plan,omitempty"`
	PlanID    string                      `json:"plan_id,omitempty"`
	Parts     events.PlanParts            `json:"parts"`
	Jobs      map[int]jobImage            `json:"jobs"`
	Last      events.Envelope             `json:"last"`
	LastPos   inventory.Pos               `json:"last_pos"`
}

type jobImage struct {
	Released  bool             `json:"released,omitempty"`
	Spec      *events.Job      `json:"spec,omitempty"`
	Cancelled string           `json:"cancelled,omitempty"`
	Ended     events.JobStatus `json:"ended,omitempty"`
	EndErr    string           `json:"end_err,omitempty"`
	EndEnv    events.Envelope  `json:"end_env"`
	Ops       map[int]opcode   `json:"ops"`
}

// opcode's fields are exported through this image.
type opcodeImage struct {
	Dispatched string           `json:"dispatched,omitempty"`
	Started    bool             `json:"started,omitempty"`
	Ended      events.JobStatus `json:"ended,omitempty"`
	EndErr     string           `json:"end_err,omitempty"`
	EndEnv     events.Envelope  `json:"end_env"`
	CancelSent bool             `json:"cancel_sent,omitempty"`
	Rate       int64            `json:"rate,omitempty"`
}

func (o opcode) MarshalJSON() ([]byte, error) {
	return json.Marshal(opcodeImage{o.dispatched, o.started, o.ended, o.endErr, o.endEnv, o.cancelSent, o.rate})
}

func (o *opcode) UnmarshalJSON(b []byte) error {
	var im opcodeImage
	if err := json.Unmarshal(b, &im); err != nil {
		return err
	}
	*o = opcode{im.Dispatched, im.Started, im.Ended, im.EndErr, im.EndEnv, im.CancelSent, im.Rate}
	return nil
}

// MarshalJSON encodes the fold, requests in their order, for the planner
// service's snapshots.
func (s *State) MarshalJSON() ([]byte, error) {
	out := make([]requestImage, 0, len(s.order))
	for _, id := range s.Order() {
		r := s.requests[id]
		im := requestImage{ID: r.id, Kind: r.kind, Origin: r.origin, OriginPos: r.originPos, Evac: r.evac,
			Change: r.change, Approved: r.approved, Cancelled: r.cancelled, Rejected: r.rejected,
			Finished: r.finished, Plan: r.plan, PlanID: r.planID, Parts: r.parts, Jobs: map[int]jobImage{}, Last: r.last, LastPos: r.lastPos}
		for i, j := range r.jobs {
			ji := jobImage{j.released, j.spec, j.cancelled, j.ended, j.endErr, j.endEnv, map[int]opcode{}}
			for k, o := range j.ops {
				ji.Ops[k] = *o
			}
			im.Jobs[i] = ji
		}
		out = append(out, im)
	}
	return json.Marshal(out)
}

// UnmarshalJSON restores a fold MarshalJSON encoded.
func (s *State) UnmarshalJSON(b []byte) error {
	var ims []requestImage
	if err := json.Unmarshal(b, &ims); err != nil {
		return err
	}
	*s = *NewState()
	for _, im := range ims {
		r := s.request(im.ID)
		r.kind, r.origin, r.originPos, r.evac, r.change = im.Kind, im.Origin, im.OriginPos, im.Evac, im.Change
		r.approved, r.cancelled, r.rejected, r.finished = im.Approved, im.Cancelled, im.Rejected, im.Finished
		r.plan, r.planID, r.parts, r.last, r.lastPos = im.Plan, im.PlanID, im.Parts, im.Last, im.LastPos
		for i, ji := range im.Jobs {
			j := r.job(i)
			j.released, j.spec, j.cancelled, j.ended, j.endErr, j.endEnv = ji.Released, ji.Spec, ji.Cancelled, ji.Ended, ji.EndErr, ji.EndEnv
			for k, o := range ji.Ops {
				*j.op(k) = o
			}
		}
	}
	s.unsorted = true
	return nil
}
