package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/planner/iallocator"
)

// largeTarget is the time Drove should answer the large case in.
const largeTarget = time.Second

// largeRuns bounds the timed runs of the large case: each takes seconds.
const largeRuns = 3

// largeResult is the large case, measured in a child process.
type largeResult struct {
	Nodes     int     `json:"nodes"`
	Instances int     `json:"instances"`
	Request   string  `json:"request"`
	Asked     int     `json:"asked"`
	Moved     int     `json:"moved"`
	Failed    int     `json:"failed"`
	RequestMB float64 `json:"request_mb"`
	// PlanSeconds times planner.Compute on the cluster value; AnswerSeconds
	// times iallocator.Answer on the request bytes (decode, plan, encode).
	// Both are the best of a few runs.
	PlanSeconds   float64 `json:"plan_seconds"`
	AnswerSeconds float64 `json:"answer_seconds"`
	// The CPU time the process spent in those best runs (all threads,
	// the garbage collector's included): far below the wall time, it says
	// the machine was busy with other work.
	PlanCPUSeconds   float64 `json:"plan_cpu_seconds"`
	AnswerCPUSeconds float64 `json:"answer_cpu_seconds"`
	GenSeconds       float64 `json:"generate_seconds"`
	ScoreBefore      float64 `json:"score_before"`
	ScoreAfter       float64 `json:"score_after"`
	// VmHWMKB is the child's own peak RSS read from /proc/self/status;
	// MaxRSSKB is the same peak as the parent saw it in the child's rusage.
	VmHWMKB   int64    `json:"vm_hwm_kb"`
	MaxRSSKB  int64    `json:"max_rss_kb"`
	Target    string   `json:"target"`
	PlanMet   bool     `json:"plan_met_target"`
	AnswerMet bool     `json:"answer_met_target"`
	Failures  []string `json:"failures,omitempty"`
}

// runLargeChild runs the large case in this process and prints it as JSON.
func runLargeChild(cfg config, stdout, stderr io.Writer) int {
	l, err := measureLarge(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "large case: %v\n", err)
		return 1
	}
	if err := json.NewEncoder(stdout).Encode(l); err != nil {
		fmt.Fprintf(stderr, "large case: %v\n", err)
		return 1
	}
	return 0
}

func measureLarge(cfg config) (largeResult, error) {
	var l largeResult
	start := time.Now()
	c, err := clustergen.Generate(clustergen.Spec{Groups: 1, NodesPerGroup: cfg.largeN,
		InstancesPerNode: cfg.largeIPN, Fill: 0.6, Mix: cfg.largeMix, Seed: cfg.seed})
	if err != nil {
		return l, err
	}
	l.GenSeconds = time.Since(start).Seconds()
	req := clustergen.EvacuateNodes(c, clustergen.NodesOfGroup(c, 0, 4), planner.EvacAll)
	doc, err := iallocator.EncodeRequest(c, req)
	if err != nil {
		return l, err
	}
	l.Nodes, l.Instances, l.Asked = len(c.Nodes), len(c.Instances), len(req.Instances)
	l.Request = "evacuate 4 nodes (all)"
	l.RequestMB = float64(len(doc)) / (1 << 20)
	opts := planner.DefaultOptions()

	var p *planner.Plan
	plan, planCPU, err := bestOf(func() (err error) {
		p, err = planner.Compute(c, req, opts)
		return err
	})
	if err != nil {
		return l, err
	}
	answer, answerCPU, err := bestOf(func() error {
		_, err := iallocator.Answer(doc, opts)
		return err
	})
	if err != nil {
		return l, err
	}
	l.PlanSeconds, l.AnswerSeconds = plan, answer
	l.PlanCPUSeconds, l.AnswerCPUSeconds = planCPU, answerCPU
	l.Moved, l.Failed = len(p.Moved), len(p.Failed)
	l.ScoreBefore, l.ScoreAfter = p.ScoreBefore, p.ScoreAfter
	for _, f := range p.Failed {
		l.Failures = append(l.Failures, f.Instance+": "+f.Reason)
	}
	l.Target = largeTarget.String()
	l.PlanMet = plan < largeTarget.Seconds()
	l.AnswerMet = answer < largeTarget.Seconds()
	l.VmHWMKB = vmHWM()
	return l, nil
}

// bestOf runs f largeRuns times and returns the best wall time and the
// process CPU time of that run.
func bestOf(f func() error) (wall, cpu float64, err error) {
	wall = math.MaxFloat64
	for i := 0; i < largeRuns; i++ {
		runtime.GC()
		c0 := cpuSeconds()
		t := time.Now()
		if err := f(); err != nil {
			return 0, 0, err
		}
		if w := time.Since(t).Seconds(); w < wall {
			wall, cpu = w, cpuSeconds()-c0
		}
	}
	return wall, cpu, nil
}

// cpuSeconds is the user and system time this process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// vmHWM reads this process's peak resident set from /proc/self/status, in
// KiB, or -1 where there is no such file.
func vmHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// runLargeParent runs the large case in a child process of this binary and
// reads its result and peak RSS.
func runLargeParent(ctx context.Context, cfg config) (*largeResult, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"-case", "large", "-seed", strconv.FormatUint(cfg.seed, 10),
		"-large-nodes", strconv.Itoa(cfg.largeN), "-large-instances-per-node", strconv.Itoa(cfg.largeIPN),
		"-large-mix", mixString(cfg.largeMix)}
	run := runTool(ctx, 10*time.Minute, self, args...)
	if run.Err != "" {
		return nil, fmt.Errorf("%s: %s", run.Err, clip(run.Stderr, 2000))
	}
	var l largeResult
	if err := json.Unmarshal(run.Stdout, &l); err != nil {
		return nil, fmt.Errorf("reading the child's result: %w", err)
	}
	l.MaxRSSKB = run.MaxRSSKB
	return &l, nil
}

func mixString(m clustergen.Mix) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%g", k, m[k]))
	}
	return strings.Join(parts, ",")
}
