package client

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/drovehq/drove/events"
)

// Progress folds a request's watch stream into one row per job, for the
// client commands' live display and summary.
type Progress struct {
	Request  string
	Jobs     []*JobRow
	Planned  bool
	Finished bool
	Rejected string
	Moved    []MovedRow
	Failed   []FailedRow
	Started  time.Time
	Ended    time.Time
	Before   float64
	After    float64
}

// JobRow is one job as the watcher sees it.
type JobRow struct {
	Index    int
	Instance string
	Ops      int
	Op       int    // opcode being run, 1-based; 0 before the first
	OpName   string // e.g. migrate → node-b2
	State    string // waiting, queued, running, success, error, canceled
	Phase    string
	Current  int64
	Total    int64
	ETA      float64
	Rate     int64
	Message  string
}

// MovedRow and FailedRow are the request's outcome.
type MovedRow struct {
	Instance string   `json:"instance"`
	Group    string   `json:"group"`
	Nodes    []string `json:"nodes"`
}

type FailedRow struct {
	Instance string `json:"instance"`
	Reason   string `json:"reason"`
}

type wireOpcode struct {
	OpID       string `json:"op_id"`
	Instance   string `json:"instance"`
	TargetNode string `json:"target_node"`
	RemoteNode string `json:"remote_node"`
	From       string `json:"from"`
	To         string `json:"to"`
}

// wireEvent is the part of a request's events the progress view reads.
type wireEvent struct {
	Job   json.RawMessage `json:"job"` // a job's index, or a whole job
	Index int             `json:"index"`
	Jobs  []struct {
		Index   int          `json:"index"`
		Opcodes []wireOpcode `json:"opcodes"`
	} `json:"jobs"`
	Opcode         wireOpcode  `json:"opcode"`
	Status         string      `json:"status"`
	Error          string      `json:"error"`
	Reason         string      `json:"reason"`
	Phase          string      `json:"phase"`
	Current        int64       `json:"current"`
	Total          int64       `json:"total"`
	ETASeconds     float64     `json:"eta_seconds"`
	BytesPerSecond int64       `json:"bytes_per_second"`
	Message        string      `json:"message"`
	Moved          []MovedRow  `json:"moved"`
	Failed         []FailedRow `json:"failed"`
	ScoreBefore    float64     `json:"score_before"`
	ScoreAfter     float64     `json:"score_after"`
	Part           int         `json:"part"` // of a plan in parts
}

// jobIndex is the job the event is about: JobReleased carries the whole
// job, the others its index.
func (v wireEvent) jobIndex() int {
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

// row is job i's row, added (in index order) if new.
// The rows are kept sorted, so finding one is a binary search: a plan may
// have thousands of jobs.
func (p *Progress) row(i int) *JobRow {
	k := sort.Search(len(p.Jobs), func(k int) bool { return p.Jobs[k].Index >= i })
	if k < len(p.Jobs) && p.Jobs[k].Index == i {
		return p.Jobs[k]
	}
	r := &JobRow{Index: i, State: "waiting"}
	p.Jobs = slices.Insert(p.Jobs, k, r)
	return r
}

// Apply folds one event in. It reports whether anything visible changed.
func (p *Progress) Apply(ev Event) bool {
	if p.Started.IsZero() {
		p.Started = ev.Time
	}
	var v wireEvent
	_ = json.Unmarshal(ev.Payload, &v)
	switch ev.Type {
	case events.TypePlanComputed:
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
	case events.TypeJobReleased:
		r := p.row(v.jobIndex())
		if r.State == "waiting" {
			r.State = "queued"
		}
	case events.TypeOpcodeDispatched:
		r := p.row(v.jobIndex())
		r.State, r.Op = "running", v.Index+1
		r.OpName = describeOp(v.Opcode)
		r.Current, r.Total, r.ETA, r.Phase = 0, 0, 0, ""
		if r.Instance == "" {
			r.Instance = v.Opcode.Instance
		}
	case events.TypeProgress:
		r := p.row(v.jobIndex())
		r.Phase, r.Current, r.Total, r.ETA, r.Rate, r.Message = v.Phase, v.Current, v.Total, v.ETASeconds, v.BytesPerSecond, v.Message
	case events.TypeJobEnded:
		r := p.row(v.jobIndex())
		r.State, r.Message = v.Status, v.Error
	case events.TypeJobCancelled:
		r := p.row(v.jobIndex())
		r.State, r.Message = "canceled", v.Reason
	case events.TypeRequestRejected:
		p.Rejected = v.Reason
		p.Finished, p.Ended = true, ev.Time
	case events.TypeRequestFinished:
		p.Finished, p.Ended = true, ev.Time
		p.Moved, p.Failed = v.Moved, v.Failed
	default:
		return false
	}
	return true
}

func describeOp(op wireOpcode) string {
	name := strings.ToLower(strings.TrimPrefix(op.OpID, "OP_INSTANCE_"))
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

// Percent is how far a job is, across its opcodes.
func (r *JobRow) Percent() float64 {
	switch r.State {
	case "success":
		return 100
	case "waiting", "queued":
		return 0
	}
	if r.Ops == 0 {
		return 0
	}
	done := float64(r.Op - 1)
	if r.Total > 0 {
		done += float64(min(r.Current, r.Total)) / float64(r.Total)
	}
	return 100 * done / float64(r.Ops)
}

// Line renders one job row.
func (r *JobRow) Line() string {
	s := fmt.Sprintf("job %-3d %-20s %-9s %5.1f%%", r.Index, trunc(r.Instance, 20), r.State, r.Percent())
	switch r.State {
	case "running":
		s += fmt.Sprintf("  op %d/%d %s", r.Op, r.Ops, r.OpName)
		if r.Phase != "" {
			s += " [" + r.Phase + "]"
		}
		if r.ETA > 0 {
			s += fmt.Sprintf("  ETA %s", (time.Duration(r.ETA * float64(time.Second))).Round(time.Second))
		}
		if r.Rate > 0 {
			s += fmt.Sprintf("  %.1f MiB/s", float64(r.Rate)/(1<<20))
		}
	case "error", "canceled":
		if r.Message != "" {
			s += "  " + trunc(r.Message, 80)
		}
	}
	return s
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// Summary renders the outcome.
func (p *Progress) Summary(w io.Writer) {
	if p.Rejected != "" {
		fmt.Fprintf(w, "Request %s was rejected: %s\n", p.Request, p.Rejected)
		return
	}
	took := p.Ended.Sub(p.Started).Round(100 * time.Millisecond)
	fmt.Fprintf(w, "Request %s finished in %s: %d moved, %d not moved", p.Request, took, len(p.Moved), len(p.Failed))
	if p.Before != 0 || p.After != 0 {
		fmt.Fprintf(w, " (cluster score %.4f → %.4f planned)", p.Before, p.After)
	}
	fmt.Fprintln(w)
	for _, m := range p.Moved {
		fmt.Fprintf(w, "  ✓ %-20s → %s %s\n", m.Instance, m.Group, strings.Join(m.Nodes, ", "))
	}
	for _, f := range p.Failed {
		fmt.Fprintf(w, "  ✗ %-20s %s\n", f.Instance, f.Reason)
	}
}

// Renderer draws Progress to a terminal (redrawing in place) or, when out
// is not a terminal, prints a line whenever a job changes state.
type Renderer struct {
	Out      io.Writer
	Terminal bool
	drawn    int
	last     map[int]string
}

// Draw shows the current state.
func (r *Renderer) Draw(p *Progress) {
	if !r.Terminal {
		if r.last == nil {
			r.last = map[int]string{}
		}
		for _, j := range p.Jobs {
			key := fmt.Sprintf("%s/%d", j.State, j.Op)
			if r.last[j.Index] != key {
				r.last[j.Index] = key
				fmt.Fprintln(r.Out, j.Line())
			}
		}
		return
	}
	if r.drawn > 0 {
		fmt.Fprintf(r.Out, "\x1b[%dA", r.drawn)
	}
	var b strings.Builder
	counts := map[string]int{}
	for _, j := range p.Jobs {
		counts[j.State]++
		b.WriteString("\x1b[2K" + j.Line() + "\n")
	}
	fmt.Fprintf(&b, "\x1b[2K%d jobs: %d running, %d queued, %d waiting, %d done, %d failed, %d canceled\n",
		len(p.Jobs), counts["running"], counts["queued"], counts["waiting"], counts["success"], counts["error"], counts["canceled"])
	fmt.Fprint(r.Out, b.String())
	r.drawn = len(p.Jobs) + 1
}
