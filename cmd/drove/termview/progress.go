package termview

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/client"
)

// Progress folds a request's watch stream into one row per job, for the
// client commands' live display and summary.
type Progress struct {
	Request  string
	Jobs     []*JobRow
	Planned  bool
	Finished bool
	Rejected string
	Moved    []events.Moved
	Failed   []events.Failed
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
	Current  int64 // bytes of the opcode underway
	Total    int64
	ETA      float64
	Rate     int64
	Message  string
	// DoneBytes are the bytes the job's finished opcodes moved (opcodes
	// that move no data, such as a failover, add nothing).
	DoneBytes int64
}

// wireEvent is the part of a request's events the progress view reads.
type wireEvent struct {
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
func (p *Progress) Apply(ev client.Event) bool {
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
		r.Current, r.Total, r.ETA, r.Rate, r.Phase = 0, 0, 0, 0, ""
		if r.Instance == "" {
			r.Instance = v.Opcode.Instance
		}
	case events.TypeProgress:
		r := p.row(v.jobIndex())
		if r.Op > 0 && v.Index+1 != r.Op {
			return false // a late report of an opcode before
		}
		r.Phase, r.Current, r.Total, r.ETA, r.Rate, r.Message = v.Phase, v.Current, v.Total, v.ETASeconds, v.BytesPerSecond, v.Message
	case events.TypeJobEnded:
		r := p.row(v.jobIndex())
		r.State, r.Message = v.Status, v.Error
		if v.Status == "success" {
			r.DoneBytes += r.Total
			r.Current, r.Total, r.Rate, r.ETA = 0, 0, 0, 0
		}
	case events.TypeJobCancelled:
		r := p.row(v.jobIndex())
		r.State, r.Message = "canceled", v.Reason
	case events.TypeRequestRejected:
		p.Rejected = v.Reason
		p.Finished, p.Ended = true, ev.Time
	case events.TypeRequestFinished:
		p.Finished, p.Ended = true, ev.Time
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

// settle gives a job whose end the stream did not show (the request's
// end can come first) the fate the outcome says: moved is success; not
// moved is canceled when its job was cancelled, else error.
func (p *Progress) settle(r *JobRow, moved []events.Moved, failed []events.Failed) {
	if r.State == "success" || r.State == "error" || r.State == "canceled" {
		return
	}
	if slices.ContainsFunc(moved, func(m events.Moved) bool { return m.Instance == r.Instance }) {
		r.State, r.DoneBytes = "success", r.DoneBytes+r.Total
		r.Current, r.Total, r.Rate, r.ETA = 0, 0, 0, 0
		return
	}
	for _, f := range failed {
		if f.Instance == r.Instance {
			r.State, r.Message, r.Rate, r.ETA = "error", f.Reason, 0, 0
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

// Bytes are what the job has moved and what it is known to move: its
// finished opcodes' bytes and the opcode underway's.
func (r *JobRow) Bytes() (done, total int64) {
	return r.DoneBytes + min(r.Current, r.Total), r.DoneBytes + r.Total
}

// Percent is how far a job is: from bytes when its opcodes report bytes,
// else (opcodes that move no data) from the count of opcodes done. A job
// is 100% only when it succeeded.
func (r *JobRow) Percent() float64 {
	switch r.State {
	case "success":
		return 100
	case "waiting", "queued":
		return 0
	}
	if done, total := r.Bytes(); total > 0 {
		return min(99.9, 100*float64(done)/float64(total))
	}
	if r.Ops == 0 || r.Op == 0 {
		return 0
	}
	return 100 * float64(r.Op-1) / float64(r.Ops)
}

// Remaining is the job's ETA: the executor's, else from bytes and rate.
func (r *JobRow) Remaining() time.Duration {
	if r.State != "running" {
		return 0
	}
	if r.ETA > 0 {
		return time.Duration(r.ETA * float64(time.Second))
	}
	if r.Rate > 0 && r.Total > r.Current {
		return time.Duration(float64(r.Total-r.Current) / float64(r.Rate) * float64(time.Second))
	}
	return 0
}

// step is the opcode underway, as a person reads it.
func (r *JobRow) step() string {
	if r.Op == 0 {
		return ""
	}
	s := fmt.Sprintf("op %d/%d %s", r.Op, max(r.Ops, r.Op), r.OpName)
	if r.Phase != "" {
		s += " [" + r.Phase + "]"
	}
	return s
}

// Line renders one job row as a line of its own (pipes, logs).
func (r *JobRow) Line() string {
	s := fmt.Sprintf("job %-3d %-20s %-9s %5.1f%%", r.Index, trunc(r.Instance, 20), r.State, r.Percent())
	switch r.State {
	case "running":
		s += "  " + r.step()
		if done, total := r.Bytes(); total > 0 {
			s += "  " + events.FormatBytes(done) + " of " + events.FormatBytes(total)
		}
		if eta := r.Remaining(); eta > 0 {
			s += "  ETA " + Duration(eta)
		}
		if r.Rate > 0 {
			s += "  " + Rate(r.Rate)
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

// Renderer draws Progress to a terminal (a table redrawn in place: one
// row per job with a progress bar, bytes, rate and ETA, and a total row
// for the request) or, when out is not a terminal, prints a line whenever
// a job changes state or opcode.
type Renderer struct {
	Out      io.Writer
	Terminal bool
	// Width and Height are the terminal's size (0: a default).
	Width, Height int
	screen        *Screen
	last          map[int]string
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
	if r.screen == nil {
		r.screen = &Screen{Out: r.Out, Width: r.Width, Height: r.Height}
	}
	h := r.Height
	if h <= 0 {
		h = 30
	}
	r.screen.Draw(p.Table(h - 2))
}

// Table renders the request as a table of at most maxRows lines: a header,
// job rows (running and failed jobs first when they do not all fit), and
// the total row.
func (p *Progress) Table(maxRows int) []string {
	jobs := p.visibleJobs(max(maxRows-3, 1))
	var rows [][]string
	for _, j := range jobs {
		done, total := j.Bytes()
		bytes := ""
		if total > 0 {
			bytes = events.FormatBytes(done) + " / " + events.FormatBytes(total)
		}
		step := j.step()
		if j.State == "error" || j.State == "canceled" {
			step = j.Message
		}
		rows = append(rows, []string{strconv.Itoa(j.Index), j.Instance, j.State,
			Bar(j.Percent(), 20), fmt.Sprintf("%.1f%%", j.Percent()), bytes, Rate(j.Rate), Duration(j.Remaining()), step})
	}
	if hidden := len(p.Jobs) - len(jobs); hidden > 0 {
		rows = append(rows, []string{"", fmt.Sprintf("… %d more jobs", hidden)})
	}
	rows = append(rows, p.totalRow())
	return Table([]string{">JOB", "INSTANCE", "STATE", "PROGRESS", ">%", ">BYTES", ">RATE", ">ETA", "STEP"}, rows)
}

// totalRow is the whole request: jobs done, bytes, the summed rate, and
// the ETA of the jobs running when no job is still to start.
func (p *Progress) totalRow() []string {
	counts := map[string]int{}
	var pct float64
	var done, total, rate int64
	var eta time.Duration
	for _, j := range p.Jobs {
		counts[j.State]++
		pct += j.Percent()
		d, t := j.Bytes()
		done, total = done+d, total+t
		if j.State == "running" {
			rate += j.Rate
			eta = max(eta, j.Remaining())
		}
	}
	if len(p.Jobs) > 0 {
		pct /= float64(len(p.Jobs))
	}
	if counts["waiting"]+counts["queued"] > 0 {
		eta = 0 // not known until every job has started
	}
	state := "planning"
	switch {
	case p.Rejected != "":
		state = "rejected"
	case p.Finished:
		state, pct = "finished", 100
	case p.Planned || len(p.Jobs) > 0:
		state = "running"
	}
	bytes := ""
	if total > 0 {
		bytes = events.FormatBytes(done) + " / " + events.FormatBytes(total)
	}
	summary := fmt.Sprintf("%d/%d jobs done, %d running, %d to start", counts["success"]+counts["error"]+counts["canceled"],
		len(p.Jobs), counts["running"], counts["waiting"]+counts["queued"])
	if n := counts["error"] + counts["canceled"]; n > 0 {
		summary += fmt.Sprintf(", %d failed or canceled", n)
	}
	return []string{"all", fmt.Sprintf("%d jobs", len(p.Jobs)), state, Bar(pct, 20), fmt.Sprintf("%.1f%%", pct), bytes, Rate(rate), Duration(eta), summary}
}

// visibleJobs picks at most n jobs to show: all when they fit, else the
// running and failed ones first, then the others in order.
func (p *Progress) visibleJobs(n int) []*JobRow {
	if len(p.Jobs) <= n {
		return p.Jobs
	}
	rank := func(j *JobRow) int {
		switch j.State {
		case "running":
			return 0
		case "error", "canceled":
			return 1
		case "queued":
			return 2
		}
		return 3
	}
	out := slices.Clone(p.Jobs)
	slices.SortStableFunc(out, func(a, b *JobRow) int { return rank(a) - rank(b) })
	out = out[:n]
	slices.SortFunc(out, func(a, b *JobRow) int { return a.Index - b.Index })
	return out
}
