package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/planner/iallocator"
)

// scoreEpsilon absorbs float rounding when two final scores are compared.
const scoreEpsilon = 1e-9

// toolResult is one planner's answer to one case.
type toolResult struct {
	Seconds  float64          `json:"seconds"`
	TimedOut bool             `json:"timed_out,omitempty"`
	Error    string           `json:"error,omitempty"`
	Stderr   string           `json:"stderr,omitempty"`
	Moved    int              `json:"moved"`
	Failed   int              `json:"failed"`
	Jobs     int              `json:"jobs"`
	Score    *float64         `json:"final_score,omitempty"`
	Problems []string         `json:"problems,omitempty"`
	MaxRSSKB int64            `json:"max_rss_kb,omitempty"`
	Failures []planner.Failed `json:"failures,omitempty"`
}

func (t *toolResult) answered() bool { return t.Error == "" && t.Score != nil }

// caseResult is one request on one cluster, answered by both planners.
type caseResult struct {
	NodesPerGroup int         `json:"nodes_per_group"`
	Nodes         int         `json:"nodes"`
	Instances     int         `json:"instances"`
	Request       string      `json:"request"`
	Asked         int         `json:"asked"`
	InitialScore  float64     `json:"initial_score"`
	Hail          toolResult  `json:"hail"`
	Drove         toolResult  `json:"drove"`
	DroveBin      *toolResult `json:"drove_bin,omitempty"`
	Ratio         float64     `json:"ratio_hail_over_drove"`
	RatioText     string      `json:"ratio"`
	Quality       string      `json:"quality"`
	QualityOK     bool        `json:"quality_ok"`
	Notes         []string    `json:"notes,omitempty"`
}

// benchCase is a request and the nodes it empties.
type benchCase struct {
	name      string
	req       planner.Request
	evacuated []string
}

// runSize generates the cluster of one group size and runs every case on
// it, writing the request documents to dir.
func runSize(ctx context.Context, cfg config, npg int, dir string, w io.Writer) ([]caseResult, error) {
	spec := clustergen.Spec{Groups: 2, NodesPerGroup: npg, InstancesPerNode: 10, Fill: 0.6, Mix: cfg.mix, Seed: cfg.seed}
	c, err := clustergen.Generate(spec)
	if err != nil {
		return nil, err
	}
	initial, _, err := planner.Score(c)
	if err != nil {
		return nil, err
	}
	one := clustergen.NodesOfGroup(c, 0, 1)
	four := clustergen.NodesOfGroup(c, 0, 4)
	cases := []benchCase{
		{"evacuate 1 node (all)", clustergen.EvacuateNodes(c, one, planner.EvacAll), one},
		{"evacuate 4 nodes (all)", clustergen.EvacuateNodes(c, four, planner.EvacAll), four},
		{"change-group 50", clustergen.ChangeGroupRequest(c, 50, cfg.seed), nil},
	}
	cases = append(cases, allocCases(c, cfg.seed)...)
	var out []caseResult
	for i, bc := range cases {
		if ctx.Err() != nil {
			break
		}
		doc, err := iallocator.EncodeRequest(c, bc.req)
		if err != nil {
			return out, err
		}
		path := filepath.Join(dir, fmt.Sprintf("npg%d-case%d.json", npg, i+1))
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			return out, err
		}
		r := caseResult{NodesPerGroup: npg, Nodes: len(c.Nodes), Instances: len(c.Instances),
			Request: bc.name, Asked: max(len(bc.req.Instances), len(bc.req.New)), InitialScore: initial}
		r.Hail = runHail(ctx, cfg, c, path, bc)
		r.Drove = runDrove(cfg, c, doc, path, bc, &r)
		if cfg.droveBin != "" {
			b := runDroveBin(ctx, cfg, c, path, bc)
			r.DroveBin = &b
		}
		judge(cfg, &r)
		printCase(w, &r, cfg.budget.String())
		out = append(out, r)
	}
	return out, nil
}

// runHail runs hail on the request file and applies its moves.
func runHail(ctx context.Context, cfg config, c *planner.Cluster, path string, bc benchCase) toolResult {
	args := append(append([]string(nil), cfg.hailArgs...), path)
	run := runTool(ctx, cfg.budget, cfg.hail, args...)
	keep(cfg, path, "hail", run.Stdout)
	return resultOf(c, bc, run)
}

// keep saves a tool's answer next to the request when -keep is given.
func keep(cfg config, path, tool string, answer []byte) {
	if cfg.keep != "" && len(answer) > 0 {
		_ = os.WriteFile(strings.TrimSuffix(path, ".json")+"-"+tool+".out.json", answer, 0o644)
	}
}

// runDroveBin runs the drove binary on the request file.
func runDroveBin(ctx context.Context, cfg config, c *planner.Cluster, path string, bc benchCase) toolResult {
	var best toolRun
	for i := 0; i < cfg.runs; i++ {
		run := runTool(ctx, cfg.budget, cfg.droveBin, "iallocator", path)
		if i == 0 || run.Wall < best.Wall {
			best = run
		}
		if run.Err != "" {
			best = run
			break
		}
	}
	return resultOf(c, bc, best)
}

// resultOf turns an external run into a result: its answer, its moves
// applied and scored.
func resultOf(c *planner.Cluster, bc benchCase, run toolRun) toolResult {
	t := toolResult{Seconds: run.Wall.Seconds(), TimedOut: run.TimedOut, Error: run.Err,
		Stderr: clip(run.Stderr, 4000), MaxRSSKB: run.MaxRSSKB}
	if run.Err != "" {
		return t
	}
	fill(c, bc, run.Stdout, &t)
	return t
}

// runDrove times iallocator.Answer in process on the same bytes, best of
// cfg.runs, and checks the plan's own score against the applied one.
func runDrove(cfg config, c *planner.Cluster, doc []byte, path string, bc benchCase, r *caseResult) toolResult {
	var t toolResult
	var out []byte
	best := time.Duration(math.MaxInt64)
	for i := 0; i < cfg.runs; i++ {
		start := time.Now()
		o, err := iallocator.Answer(doc, planner.DefaultOptions())
		d := time.Since(start)
		if err != nil {
			t.Error = err.Error()
			t.Seconds = d.Seconds()
			return t
		}
		best = min(best, d)
		out = o
	}
	t.Seconds = best.Seconds()
	keep(cfg, path, "drove", out)
	fill(c, bc, out, &t)
	if dc, dr, err := iallocator.Decode(doc); err == nil && t.Score != nil {
		if p, err := planner.Compute(dc, dr, planner.DefaultOptions()); err == nil && math.Abs(p.ScoreAfter-*t.Score) > 1e-6 {
			r.Notes = append(r.Notes, fmt.Sprintf("Drove's own final score %.6f differs from the recounted one %.6f", p.ScoreAfter, *t.Score))
		}
	}
	return t
}

// fill parses an answer into t and applies its moves.
func fill(c *planner.Cluster, bc benchCase, stdout []byte, t *toolResult) {
	if placing(bc.req.Kind) {
		fillPlacement(c, bc, stdout, t)
		return
	}
	a, err := parseAnswer(stdout)
	if err != nil {
		t.Error = err.Error()
		return
	}
	if !a.Success {
		t.Error = "answered success=false: " + a.Info
		return
	}
	t.Moved, t.Failed, t.Jobs, t.Failures = len(a.Moved), len(a.Failed), a.Jobs, a.Failed
	o, err := applyMoves(c, a.Moved, bc.evacuated)
	if err != nil {
		t.Error = err.Error()
		return
	}
	t.Score, t.Problems = &o.Score, o.Problems
}

// judge sets the ratio and the QUALITY verdict of a case.
func judge(cfg config, r *caseResult) {
	h, d := &r.Hail, &r.Drove
	switch {
	case d.Seconds <= 0:
		r.RatioText = "n/a"
	case h.TimedOut:
		r.Ratio = cfg.budget.Seconds() / d.Seconds
		r.RatioText = fmt.Sprintf(">= %s x", ratioNumber(r.Ratio))
	case h.Error != "" && h.Seconds == 0:
		r.RatioText = "n/a"
	default:
		r.Ratio = h.Seconds / d.Seconds
		r.RatioText = ratioNumber(r.Ratio) + " x"
	}
	switch {
	case !d.answered():
		r.Quality = "FAIL: Drove gave no usable answer: " + d.Error
	case len(d.Problems) > 0:
		r.Quality = "FAIL: Drove's plan is invalid: " + summarizeProblems(d.Problems)
	case h.TimedOut:
		r.Quality = fmt.Sprintf("n/a: hail killed after %s; Drove moved %d, final score %.4f", cfg.budget, d.Moved, *d.Score)
		r.QualityOK = true
	case !h.answered():
		r.Quality = fmt.Sprintf("n/a: hail gave no usable answer; Drove moved %d, final score %.4f", d.Moved, *d.Score)
		r.QualityOK = true
	case d.Moved > h.Moved:
		r.Quality = fmt.Sprintf("PASS: Drove moved more (%d > %d); final scores hail %.4f, Drove %.4f", d.Moved, h.Moved, *h.Score, *d.Score)
		r.QualityOK = true
	case d.Moved < h.Moved:
		r.Quality = fmt.Sprintf("FAIL: Drove moved fewer (%d < %d); final scores hail %.4f, Drove %.4f", d.Moved, h.Moved, *h.Score, *d.Score)
	case *d.Score <= *h.Score+scoreEpsilon:
		r.Quality = fmt.Sprintf("PASS: both moved %d; Drove's final score %.4f <= hail's %.4f", d.Moved, *d.Score, *h.Score)
		r.QualityOK = true
	default:
		r.Quality = fmt.Sprintf("FAIL: both moved %d; Drove's final score %.4f > hail's %.4f", d.Moved, *d.Score, *h.Score)
	}
	if len(h.Problems) > 0 {
		r.Notes = append(r.Notes, "hail's plan is invalid: "+summarizeProblems(h.Problems))
	}
	if r.DroveBin != nil && !r.DroveBin.answered() {
		r.Notes = append(r.Notes, "drove binary: "+r.DroveBin.Error+" "+r.DroveBin.Stderr)
	}
}

func ratioNumber(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
