package termview

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/progress"
	"github.com/drovehq/drove/gateway/wire"
)

// Progress is a request's watch stream folded (gateway/progress, the
// fold the console's rows come from too), for the client commands' live
// display and summary.
type Progress struct {
	progress.Progress
	Request string
}

// Apply folds one event in. It reports whether anything visible changed.
func (p *Progress) Apply(ev client.Event) bool { return p.Progress.Apply(ev.WatchLine) }

// JobRow is one job as the watcher sees it.
type JobRow = wire.JobRow

// step is the opcode underway, as a person reads it.
func step(r *JobRow) string {
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
func Line(r *JobRow) string {
	s := fmt.Sprintf("job %-3d %-20s %-9s %5.1f%%", r.Index, trunc(r.Instance, 20), r.State, r.Percent)
	switch r.State {
	case "running":
		s += "  " + step(r)
		if r.BytesTotal > 0 {
			s += "  " + events.FormatBytes(r.BytesDone) + " of " + events.FormatBytes(r.BytesTotal)
		}
		if eta := progress.Remaining(r); eta > 0 {
			s += "  ETA " + Duration(eta)
		}
		if r.BytesPerSecond > 0 {
			s += "  " + Rate(r.BytesPerSecond)
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
				fmt.Fprintln(r.Out, Line(j))
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
		done, total := j.BytesDone, j.BytesTotal
		bytes := ""
		if total > 0 {
			bytes = events.FormatBytes(done) + " / " + events.FormatBytes(total)
		}
		step := step(j)
		if j.State == "error" || j.State == "canceled" {
			step = j.Message
		}
		rows = append(rows, []string{strconv.Itoa(j.Index), j.Instance, j.State,
			Bar(j.Percent, 20), fmt.Sprintf("%.1f%%", j.Percent), bytes, Rate(j.BytesPerSecond), Duration(progress.Remaining(j)), step})
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
		pct += j.Percent
		done, total = done+j.BytesDone, total+j.BytesTotal
		if j.State == "running" {
			rate += j.BytesPerSecond
			eta = max(eta, progress.Remaining(j))
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
