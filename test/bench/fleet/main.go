package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/drovehq/drove/test/bench/cli"
)

type config struct {
	quick       bool
	nodes       int
	groupNodes  int
	perNode     int
	executors   int
	wave        int
	logEvents   int
	partitions  int
	evacuate    int
	planTimeout time.Duration
	runTimeout  time.Duration
	droveBin    string
	out         string
	kafka       string // the broker the projector's fold reads (mirror.go)
}

func main() {
	cli.Main("fleet", parseFlags, runBench, func(c config) string { return c.out }, printTable)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&cfg.quick, "quick", false, "a short run: 2,000 nodes, 20,000 instances, a 200,000-event log, 4 executors (flags given explicitly win)")
	fs.IntVar(&cfg.nodes, "nodes", 10_000, "nodes in the fleet")
	fs.IntVar(&cfg.groupNodes, "group-nodes", 500, "nodes per group")
	fs.IntVar(&cfg.perNode, "instances-per-node", 10, "primary instances per node")
	fs.IntVar(&cfg.executors, "executors", 1000, "simulated executors run in this process (each its own Kafka clients): 1,000 is the most this 2-core machine holds with the embedded broker (see docs/benchmarks.md)")
	fs.IntVar(&cfg.wave, "start-wave", 100, "executors started together; the next wave starts once they run")
	fs.IntVar(&cfg.logEvents, "log-events", 1_000_000, "events in the log for the second planner restart (history appended up to it)")
	fs.IntVar(&cfg.partitions, "partitions", 24, "partitions of every topic (deploy/compose.yaml's): an executor reads about 1/partitions of the opcodes")
	fs.IntVar(&cfg.evacuate, "evacuate", 10, "nodes the evacuation empties (each with a running executor)")
	fs.DurationVar(&cfg.planTimeout, "plan-timeout", 5*time.Minute, "how long to wait for one plan before giving it up as not measured")
	fs.DurationVar(&cfg.runTimeout, "run-timeout", 3*time.Minute, "how long the evacuation may run for the fetch measure")
	fs.StringVar(&cfg.droveBin, "drove-bin", "", "the drove binary to run the planner and one executor from; empty: built into a temporary directory")
	fs.StringVar(&cfg.out, "out", "test/bench/results/fleet.json", "where to write the figures as JSON")
	kafkaFlag := cli.KafkaFlag(fs, "the broker the projector's fold reads the log from (apache: a copy of the fleet's log; embedded: the fleet's own)")
	if err := cli.Parse(fs, args); err != nil {
		return cfg, err
	}
	if cfg.quick {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for _, q := range []struct {
			flag string
			set  func()
		}{
			{"nodes", func() { cfg.nodes = 2_000 }}, {"log-events", func() { cfg.logEvents = 200_000 }},
			{"executors", func() { cfg.executors = 4 }}, {"evacuate", func() { cfg.evacuate = 4 }},
			{"plan-timeout", func() { cfg.planTimeout = 2 * time.Minute }}, {"run-timeout", func() { cfg.runTimeout = time.Minute }},
		} {
			if !given[q.flag] {
				q.set()
			}
		}
	}
	var probs []string
	if cfg.groupNodes < 1 || cfg.nodes < 2*cfg.groupNodes || cfg.nodes%cfg.groupNodes != 0 {
		probs = append(probs, "-nodes must be a multiple of -group-nodes, at least two groups")
	}
	if cfg.perNode < 1 || cfg.partitions < 1 || cfg.executors < 1 || cfg.evacuate < 1 || cfg.wave < 1 {
		probs = append(probs, "-instances-per-node, -partitions, -executors, -evacuate and -start-wave must be positive")
	}
	cfg.kafka = *kafkaFlag
	if p := cli.CheckKafka(cfg.kafka); p != "" {
		probs = append(probs, p)
	}
	if cfg.executors > cfg.nodes {
		probs = append(probs, "-executors must not exceed -nodes (they run on the first nodes)")
	}
	if len(probs) > 0 {
		return cfg, errors.New(strings.Join(probs, "; "))
	}
	cfg.evacuate = min(cfg.evacuate, cfg.executors)
	return cfg, nil
}

// result is fleet.json. The first keys are the issue's; a nil pointer is a
// figure not measured, written as null, with the reason in Notes.
type result struct {
	Nodes                   int      `json:"nodes"`
	Instances               int      `json:"instances"`
	Executors               int      `json:"executors"`
	PlanLatencyEvacuateS    *float64 `json:"plan_latency_evacuate_s"`
	PlanLatencyGroupChangeS *float64 `json:"plan_latency_group_change_s"`
	ExecutorFetchFraction   *float64 `json:"executor_fetch_fraction"`
	PlannerRestartS         *float64 `json:"planner_restart_s"`
	LogEvents               *int64   `json:"log_events"`
	ProjectorLiveEPS        *float64 `json:"projector_live_eps"`
	ProjectorReplayEPS      *float64 `json:"projector_replay_eps"`
	// Issue 32's ratios on this log: each rate over COPY's rows per second
	// of the same event_log rows into an empty table of event_log's
	// shape, in the same run (test/bench/copylimit); and over COPY into a
	// bare table of its columns, the stricter figure.
	ProjectorLiveRatioToCopy       *float64 `json:"projector_live_ratio_to_copy"`
	ProjectorReplayRatioToCopy     *float64 `json:"projector_replay_ratio_to_copy"`
	CopyRowsPerS                   *float64 `json:"copy_rows_per_s"`
	BareCopyRowsPerS               *float64 `json:"bare_copy_rows_per_s"`
	ProjectorLiveRatioToBareCopy   *float64 `json:"projector_live_ratio_to_bare_copy"`
	ProjectorReplayRatioToBareCopy *float64 `json:"projector_replay_ratio_to_bare_copy"`
	PlannerRSSMB                   *float64 `json:"planner_rss_mb"`
	ExecutorRSSMB                  *float64 `json:"executor_rss_mb"`

	// The first restart's log, for the restart's growth with the log.
	PlannerRestartSSmall *float64 `json:"planner_restart_s_small"`
	LogEventsSmall       *int64   `json:"log_events_small"`

	Quick      bool `json:"quick"`
	Partitions int  `json:"partitions"`
	cli.Host
	Notes map[string]string `json:"notes"`
}

func newResult(cfg config) *result {
	return &result{Executors: cfg.executors, Quick: cfg.quick, Partitions: cfg.partitions,
		Host: cli.ThisHost(), Notes: map[string]string{}}
}

// note records why a figure is what it is (or null), and prints it.
func (r *result) note(w io.Writer, key, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if old := r.Notes[key]; old != "" {
		msg = old + "; " + msg
	}
	r.Notes[key] = msg
	fmt.Fprintf(w, "  note %s: %s\n", key, fmt.Sprintf(format, args...))
}

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

func printTable(w io.Writer, r *result) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-30s %s\n", "figure", "value")
	row := func(k string, v any) { fmt.Fprintf(w, "%-30s %s\n", k, v) }
	row("nodes", fmt.Sprint(r.Nodes))
	row("instances", fmt.Sprint(r.Instances))
	row("executors", fmt.Sprint(r.Executors))
	row("plan_latency_evacuate_s", show(r.PlanLatencyEvacuateS, "%.2f"))
	row("plan_latency_group_change_s", show(r.PlanLatencyGroupChangeS, "%.2f"))
	row("executor_fetch_fraction", show(r.ExecutorFetchFraction, "%.3f"))
	row("planner_restart_s_small", show(r.PlannerRestartSSmall, "%.2f"))
	row("log_events_small", showInt(r.LogEventsSmall))
	row("planner_restart_s", show(r.PlannerRestartS, "%.2f"))
	row("log_events", showInt(r.LogEvents))
	row("projector_live_eps", show(r.ProjectorLiveEPS, "%.0f"))
	row("projector_replay_eps", show(r.ProjectorReplayEPS, "%.0f"))
	row("copy_rows_per_s", show(r.CopyRowsPerS, "%.0f"))
	row("projector_live_ratio_to_copy", show(r.ProjectorLiveRatioToCopy, "%.3f"))
	row("projector_replay_ratio_to_copy", show(r.ProjectorReplayRatioToCopy, "%.3f"))
	row("bare_copy_rows_per_s", show(r.BareCopyRowsPerS, "%.0f"))
	row("projector_live_ratio_to_bare_copy", show(r.ProjectorLiveRatioToBareCopy, "%.3f"))
	row("projector_replay_ratio_to_bare_copy", show(r.ProjectorReplayRatioToBareCopy, "%.3f"))
	row("planner_rss_mb", show(r.PlannerRSSMB, "%.0f"))
	row("executor_rss_mb", show(r.ExecutorRSSMB, "%.0f"))
	for _, k := range sortedKeys(r.Notes) {
		fmt.Fprintf(w, "note %s: %s\n", k, r.Notes[k])
	}
}

func show(v *float64, format string) string {
	if v == nil {
		return "null (not measured: see notes)"
	}
	return fmt.Sprintf(format, *v)
}

func showInt(v *int64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}
