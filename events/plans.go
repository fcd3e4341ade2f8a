package events

import "encoding/json"

// A plan costs about 550 bytes per instance, so a request of some
// thousands of instances does not fit in one record. SplitPlan cuts such a
// plan into parts its writer appends in one transaction; every reader
// joins them back with PlanParts, so the rest of Drove sees whole plans.

// SplitPlan returns pc as one event if its payload fits in maxBytes, else
// as parts sharing plan (the id the first part's event will carry), each
// with a contiguous slice of the moved, failed and jobs lists. Parts are
// cut evenly and halved until each fits, down to one job or outcome a
// part: a single part larger than maxBytes cannot be cut further, and the
// writer must refuse it.
func SplitPlan(pc PlanComputed, plan string, maxBytes int) []PlanComputed {
	pc.Plan, pc.Part, pc.Parts, pc.FirstJob = "", 0, 0, 0
	if payloadSize(pc) <= maxBytes {
		return []PlanComputed{pc}
	}
	most := max(len(pc.Jobs), len(pc.Moved), len(pc.Failed), 1)
	n := min(payloadSize(pc)/max(maxBytes, 1)+1, most)
	for {
		parts := cutPlan(pc, plan, n)
		if n >= most || allFit(parts, maxBytes) {
			return parts
		}
		n = min(2*n, most)
	}
}

func payloadSize(pc PlanComputed) int {
	b, _ := json.Marshal(pc) // plain structs: always marshal
	return len(b)
}

func allFit(parts []PlanComputed, maxBytes int) bool {
	for _, p := range parts {
		if payloadSize(p) > maxBytes {
			return false
		}
	}
	return true
}

// cutPlan cuts pc into n parts of about equal counts.
func cutPlan(pc PlanComputed, plan string, n int) []PlanComputed {
	out := make([]PlanComputed, n)
	for k := range out {
		lo, hi := k*len(pc.Jobs)/n, (k+1)*len(pc.Jobs)/n
		out[k] = PlanComputed{
			Request: pc.Request, ScoreBefore: pc.ScoreBefore, ScoreAfter: pc.ScoreAfter,
			Moved:  slice(pc.Moved, k, n),
			Failed: slice(pc.Failed, k, n),
			Jobs:   pc.Jobs[lo:hi:hi],
			Plan:   plan, Part: k, Parts: n, FirstJob: lo,
		}
	}
	return out
}

// slice is part k of n of s, never nil (the lists are required).
func slice[T any](s []T, k, n int) []T {
	lo, hi := k*len(s)/n, (k+1)*len(s)/n
	return append(make([]T, 0, hi-lo), s[lo:hi]...)
}

// PlanParts gathers the parts of one request's plan as a reader meets
// them. Parts of a plan share the request's key, so they are read in
// order, together, in one partition; a part of another plan starts over.
// The zero value is ready; the fields are exported so that a reader's
// snapshot can keep a plan read halfway.
type PlanParts struct {
	Plan string         `json:"plan,omitempty"`
	Got  []PlanComputed `json:"got,omitempty"` // by part; Parts 0 where missing
}

// Add takes one PlanComputed, whole or a part. It returns the whole plan
// and true once pc completes one (at once for a plan in one event). The
// plan returned keeps its Plan id, with Part, Parts and FirstJob zero.
func (pp *PlanParts) Add(pc PlanComputed) (PlanComputed, bool) {
	if pc.Parts <= 1 {
		*pp = PlanParts{}
		pc.Part, pc.Parts, pc.FirstJob = 0, 0, 0
		return pc, true
	}
	if pp.Plan != pc.Plan || len(pp.Got) != pc.Parts {
		*pp = PlanParts{Plan: pc.Plan, Got: make([]PlanComputed, pc.Parts)}
	}
	if pc.Part < 0 || pc.Part >= pc.Parts {
		return PlanComputed{}, false // Validate refuses it
	}
	pp.Got[pc.Part] = pc
	for _, g := range pp.Got {
		if g.Parts == 0 {
			return PlanComputed{}, false
		}
	}
	whole := joinPlan(pp.Got)
	*pp = PlanParts{}
	return whole, true
}

// joinPlan joins complete parts, in order.
func joinPlan(parts []PlanComputed) PlanComputed {
	first := parts[0]
	out := PlanComputed{Request: first.Request, ScoreBefore: first.ScoreBefore, ScoreAfter: first.ScoreAfter,
		Plan: first.Plan, Moved: []Moved{}, Failed: []Failed{}, Jobs: []Job{}}
	for _, p := range parts {
		out.Moved = append(out.Moved, p.Moved...)
		out.Failed = append(out.Failed, p.Failed...)
		out.Jobs = append(out.Jobs, p.Jobs...)
	}
	return out
}
