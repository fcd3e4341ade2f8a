// Package progress folds a request's watch stream into one row per job:
// the one fold behind `drove watch`'s live table (cmd/drove/termview) and
// the console's (the gateway sends its rows with ?rows=jobs). It reads
// only the stream's lines (gateway/wire) and the events' shapes; no I/O.
package progress

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// Progress is a request's stream folded so far.
type Progress struct {
	Jobs     []*wire.JobRow // sorted by index
	Planned  bool
	Finished bool
	Rejected string
	Moved    []events.Moved
	Failed   []events.Failed
	Started  time.Time
	Ended    time.Time
	Before   float64
	After    float64
	// changed are the rows the last Apply changed, in the order touched.
	changed []*wire.JobRow
}

// line is the part of a request's events the fold reads.
type line struct {
	Job   json.RawMessage `json:"job"` // a job's index, or a whole job
	Index int             `json:"index"`
	Jobs  []struct {
		Index   int             `json:"index"`
		Opcodes []events.Opcode `json:"opcodes"`
	} `json:"jobs"`
	Opcode         events.Opcode   `json:"opcode"`
	Status         string          `json:"status"`
	Error          string          `json:"error"`
	Reason         string          `json:"reason"`
	Phase          string          `json:"phase"`
	Current        int64           `json:"current"`
	Total          int64           `json:"total"`
	ETASeconds     float64         `json:"eta_seconds"`
	BytesPerSecond int64           `json:"bytes_per_second"`
	Message        string          `json:"message"`
	Moved          []events.Moved  `json:"moved"`
	Failed         []events.Failed `json:"failed"`
	ScoreBefore    float64         `json:"score_before"`
	ScoreAfter     float64         `json:"score_after"`
	Part           int             `json:"part"` // of a plan in parts
}

// jobIndex is the job the event is about: JobReleased carries the whole
// job, the others its index.
func (v line) jobIndex() int {
	var n int
	if json.Unmarshal(v.Job, &n) == nil {
		return n
	}
	var j struct {
		Index int `json:"index"`
	}
	_ = json.Unmarshal(v.Job, &j)
	return j.Index
}

// row is job i's row, added (in index order) if new, and marked changed.
// The rows are kept sorted, so finding one is a binary search: a plan may
// have thousands of jobs.
func (p *Progress) row(i int) *wire.JobRow {
	k := sort.Search(len(p.Jobs), func(k int) bool { return p.Jobs[k].Index >= i })
	var r *wire.JobRow
	if k < len(p.Jobs) && p.Jobs[k].Index == i {
		r = p.Jobs[k]
	} else {
		r = &wire.JobRow{Index: i, State: "waiting"}
		p.Jobs = slices.Insert(p.Jobs, k, r)
	}
	if !slices.Contains(p.changed, r) {
		p.changed = append(p.changed, r)
	}
	return r
}

// Changed are copies of the rows the last Apply changed: what a watcher
// that already holds the earlier rows needs.
func (p *Progress) Changed() []wire.JobRow {
	out := make([]wire.JobRow, len(p.changed))
	for i, r := range p.changed {
		out[i] = *r
	}
	return out
}

// Apply folds one line of the stream in. It reports whether anything
// visible changed.
func (p *Progress) Apply(l wire.WatchLine) bool {
	p.changed = p.changed[:0]
	if p.Started.IsZero() {
		p.Started = l.Time
	}
	var v line
	_ = json.Unmarshal(l.Payload, &v)
	if !p.apply(l, v) {
		return false
	}
	for _, r := range p.changed {
		derive(r)
	}
	return true
}

func (p *Progress) apply(l wire.WatchLine, v line) bool {
	switch l.Type {
	case events.TypePlanComputed:
		p.planned(v)
	case events.TypeJobReleased:
		r := p.row(v.jobIndex())
		if r.State == "waiting" {
			r.State = "queued"
		}
		var j struct {
			Opcodes []events.Opcode `json:"opcodes"`
		}
		if json.Unmarshal(v.Job, &j) == nil && len(j.Opcodes) > 0 {
			r.Ops = len(j.Opcodes) // the job as released, even when the plan was not seen
			if r.Instance == "" {
				r.Instance = j.Opcodes[0].Instance
			}
		}
	case events.TypeOpcodeDispatched:
		r := p.row(v.jobIndex())
		if r.Op > 0 && v.Index+1 > r.Op {
			r.DoneBytes += r.Total // the opcode before ended: it moved all it had
		}
		r.State, r.Op = "running", v.Index+1
		r.Ops = max(r.Ops, r.Op)
		r.OpName = describeOp(v.Opcode)
		r.Current, r.Total, r.ETASeconds, r.BytesPerSecond, r.Phase = 0, 0, 0, 0, ""
		if r.Instance == "" {
			r.Instance = v.Opcode.Instance
		}
	case events.TypeProgress:
		r := p.row(v.jobIndex())
		if r.Op > 0 && v.Index+1 != r.Op {
			p.changed = p.changed[:0]
			return false // a late report of an opcode before
		}
		r.Phase, r.Current, r.Total, r.ETASeconds, r.BytesPerSecond, r.Message = v.Phase, v.Current, v.Total, v.ETASeconds, v.BytesPerSecond, v.Message
	case events.TypeJobEnded:
		r := p.row(v.jobIndex())
		r.State, r.Message = v.Status, v.Error
		if v.Status == "success" {
			r.DoneBytes += r.Total
			r.Current, r.Total, r.BytesPerSecond, r.ETASeconds = 0, 0, 0, 0
		}
	case events.TypeJobCancelled:
		r := p.row(v.jobIndex())
		r.State, r.Message = "canceled", v.Reason
	case events.TypeRequestRejected:
		p.Rejected = v.Reason
		p.Finished, p.Ended = true, l.Time
	case events.TypeRequestFinished:
		p.Finished, p.Ended = true, l.Time
		p.Moved, p.Failed = v.Moved, v.Failed
		// The outcome is final: a job it names as moved succeeded, even
		// if its own end was not seen (the stream stops here).
		for _, r := range p.Jobs {
			p.settle(r, v.Moved, v.Failed)
		}
	default:
		return false
	}
	return true
}

// planned folds a plan (or one of its parts) in: its jobs, their opcodes'
// count and instance.
func (p *Progress) planned(v line) {
	p.Planned = true
	p.Before, p.After = v.ScoreBefore, v.ScoreAfter
	if v.Part == 0 { // a new plan, or the first of its parts
		p.Failed = p.Failed[:0]
	}
	p.Failed = append(p.Failed, v.Failed...)
	for _, j := range v.Jobs {
		r := p.row(j.Index)
		r.Ops = len(j.Opcodes)
		if len(j.Opcodes) > 0 {
			r.Instance = j.Opcodes[0].Instance
		}
	}
}

// settle gives a job whose end the stream did not show (the request's
// end can come first) the fate the outcome says: moved is success; not
// moved is canceled when its job was cancelled, else error.
func (p *Progress) settle(r *wire.JobRow, moved []events.Moved, failed []events.Failed) {
	if r.State == "success" || r.State == "error" || r.State == "canceled" {
		return
	}
	if slices.ContainsFunc(moved, func(m events.Moved) bool { return m.Instance == r.Instance }) {
		r = p.row(r.Index)
		r.State, r.DoneBytes = "success", r.DoneBytes+r.Total
		r.Current, r.Total, r.BytesPerSecond, r.ETASeconds = 0, 0, 0, 0
		return
	}
	for _, f := range failed {
		if f.Instance == r.Instance {
			r = p.row(r.Index)
			r.State, r.Message, r.BytesPerSecond, r.ETASeconds = "error", f.Reason, 0, 0
			if strings.HasPrefix(f.Reason, "job cancel") {
				r.State = "canceled"
			}
		}
	}
}

func describeOp(op events.Opcode) string {
	name := strings.ToLower(strings.TrimPrefix(string(op.OpID), "OP_INSTANCE_"))
	name = strings.ReplaceAll(name, "_", "-")
	to := op.To
	if to == "" {
		to = op.TargetNode + op.RemoteNode
	}
	if to == "" {
		return name
	}
	return name + " → " + to
}

// derive sets a row's figures from its state: bytes, percent, time left.
func derive(r *wire.JobRow) {
	r.BytesDone, r.BytesTotal = r.DoneBytes+min(r.Current, r.Total), r.DoneBytes+r.Total
	r.Percent = percent(r)
	r.RemainingSeconds = 0
	switch {
	case r.State != "running":
	case r.ETASeconds > 0:
		r.RemainingSeconds = r.ETASeconds
	case r.BytesPerSecond > 0 && r.Total > r.Current:
		r.RemainingSeconds = float64(r.Total-r.Current) / float64(r.BytesPerSecond)
	}
}

// percent is how far a job is: from bytes when its opcodes report bytes,
// else (opcodes that move no data) from the count of opcodes done. A job
// is 100% only when it succeeded.
func percent(r *wire.JobRow) float64 {
	switch r.State {
	case "success":
		return 100
	case "waiting", "queued":
		return 0
	}
	if r.BytesTotal > 0 {
		return min(99.9, 100*float64(r.BytesDone)/float64(r.BytesTotal))
	}
	if r.Ops == 0 || r.Op == 0 {
		return 0
	}
	return 100 * float64(r.Op-1) / float64(r.Ops)
}

// Remaining is a row's time left as a duration.
func Remaining(r *wire.JobRow) time.Duration {
	return time.Duration(r.RemainingSeconds * float64(time.Second))
}
