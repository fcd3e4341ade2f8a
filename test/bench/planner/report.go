package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/drovehq/drove/test/bench/cli"
)

// summary is everything the bench measured; it is written as JSON.
type summary struct {
	cli.Host
	Hail     string   `json:"hail"`
	HailArgs []string `json:"hail_args,omitempty"`
	Budget   string   `json:"hail_budget"`
	Runs     int      `json:"drove_runs"`
	Seed     uint64   `json:"seed"`
	Mix      string   `json:"mix"`
	// LoadStart and LoadEnd are the machine's load averages (1, 5, 15
	// minutes) when the bench started and ended: timings taken on a busy
	// machine are slower for both planners.
	LoadStart string       `json:"load_start,omitempty"`
	LoadEnd   string       `json:"load_end,omitempty"`
	Cases     []caseResult `json:"cases"`
	Large     *largeResult `json:"large,omitempty"`
	QualityOK bool         `json:"quality_ok"`
	Notes     []string     `json:"notes,omitempty"`
}

func newSummary(cfg config) *summary {
	return &summary{Host: cli.ThisHost(), Hail: cfg.hail, HailArgs: cfg.hailArgs, Budget: cfg.budget.String(),
		Runs: cfg.runs, Seed: cfg.seed, Mix: mixString(cfg.mix), LoadStart: cli.LoadAvg()}
}

func secs(t *toolResult, budget string) string {
	switch {
	case t.TimedOut:
		return "> " + budget
	case t.Error != "" && t.Seconds == 0:
		return "error"
	case t.Seconds < 0.01:
		return fmt.Sprintf("%.2f ms", t.Seconds*1000)
	}
	return fmt.Sprintf("%.3f s", t.Seconds)
}

func score(t *toolResult) string {
	if t.Score == nil {
		return "-"
	}
	return fmt.Sprintf("%.4f", *t.Score)
}

func counts(t *toolResult) (string, string) {
	if t.Score == nil && t.Moved == 0 && t.Failed == 0 {
		return "-", "-"
	}
	return fmt.Sprint(t.Moved), fmt.Sprint(t.Failed)
}

// printCase prints one case as soon as it is measured.
func printCase(w io.Writer, r *caseResult, budget string) {
	fmt.Fprintf(w, "[%d nodes/group, %d nodes, %d instances] %s: %d instances asked, initial score %.4f\n",
		r.NodesPerGroup, r.Nodes, r.Instances, r.Request, r.Asked, r.InitialScore)
	line := func(name string, t *toolResult, budget string) {
		m, f := counts(t)
		fmt.Fprintf(w, "  %-9s %12s  moved %-4s failed %-4s jobs %-4d final score %s\n", name, secs(t, budget), m, f, t.Jobs, score(t))
		if t.Error != "" {
			fmt.Fprintf(w, "            error: %s\n", t.Error)
		}
		if s := strings.TrimSpace(t.Stderr); s != "" {
			fmt.Fprintf(w, "            stderr: %s\n", strings.ReplaceAll(clip(s, 1500), "\n", "\n                    "))
		}
	}
	line("hail", &r.Hail, budget)
	line("drove", &r.Drove, "")
	if r.DroveBin != nil {
		line("drove-bin", r.DroveBin, "")
	}
	fmt.Fprintf(w, "  ratio hail/drove: %s\n", r.RatioText)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	fmt.Fprintf(w, "  QUALITY %s\n\n", r.Quality)
}

func printLarge(w io.Writer, l *largeResult) {
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	fmt.Fprintf(w, "[large: 1 group, %d nodes, %d instances, request %.1f MB] %s: %d instances asked, Drove only\n",
		l.Nodes, l.Instances, l.RequestMB, l.Request, l.Asked)
	fmt.Fprintf(w, "  plan (planner.Compute)         %.3f s, %.3f s CPU  (target < %s: %s)\n", l.PlanSeconds, l.PlanCPUSeconds, l.Target, verdict(l.PlanMet))
	fmt.Fprintf(w, "  answer (iallocator.Answer)     %.3f s, %.3f s CPU  (target < %s: %s)\n", l.AnswerSeconds, l.AnswerCPUSeconds, l.Target, verdict(l.AnswerMet))
	fmt.Fprintf(w, "  moved %d, failed %d, score %.4f -> %.4f\n", l.Moved, l.Failed, l.ScoreBefore, l.ScoreAfter)
	fmt.Fprintf(w, "  peak RSS of the child process: %.1f MiB (rusage), VmHWM %.1f MiB; generating took %.2f s\n",
		float64(l.MaxRSSKB)/1024, float64(l.VmHWMKB)/1024, l.GenSeconds)
	for i, f := range l.Failures {
		if i == 5 {
			fmt.Fprintf(w, "  ... and %d more failures\n", len(l.Failures)-5)
			break
		}
		fmt.Fprintf(w, "  failed: %s\n", clip(f, 300))
	}
	fmt.Fprintln(w)
}

// judgeAll sets QualityOK: every case passed its QUALITY check.
func (s *summary) judgeAll() {
	s.QualityOK = true
	for i := range s.Cases {
		s.QualityOK = s.QualityOK && s.Cases[i].QualityOK
	}
}

// printSummary prints the table of every case.
func printSummary(w io.Writer, s *summary) {
	fmt.Fprintln(w, "SUMMARY")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "nodes/group\trequest\tasked\thail time\tdrove time\thail/drove\tmoved hail/drove\tfailed hail/drove\tscore initial\tscore hail\tscore drove\tquality")
	for i := range s.Cases {
		r := &s.Cases[i]
		hm, hf := counts(&r.Hail)
		dm, df := counts(&r.Drove)
		q, _, _ := strings.Cut(r.Quality, ":")
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s/%s\t%s/%s\t%.4f\t%s\t%s\t%s\n", r.NodesPerGroup, r.Request, r.Asked,
			secs(&r.Hail, s.Budget), secs(&r.Drove, ""), r.RatioText, hm, dm, hf, df, r.InitialScore, score(&r.Hail), score(&r.Drove), q)
	}
	if l := s.Large; l != nil {
		fmt.Fprintf(tw, "%d (1 group)\t%s\t%d\t-\t%.3f s plan, %.3f s answer\t-\t-/%d\t-/%d\t%.4f\t-\t%.4f\tpeak RSS %.0f MiB\n",
			l.Nodes, l.Request, l.Asked, l.PlanSeconds, l.AnswerSeconds, l.Moved, l.Failed, l.ScoreBefore, l.ScoreAfter, float64(l.MaxRSSKB)/1024)
	}
	tw.Flush()
	fmt.Fprintf(w, "load average at start %s, at end %s (%d CPUs)\n", s.LoadStart, s.LoadEnd, s.CPUs)
}
