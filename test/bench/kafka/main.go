package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/test/bench/cli"
)

type config struct {
	events          int
	txnEvents       int
	requests        int
	electionTimeout time.Duration
	droveBin        string
	out             string
}

func main() {
	cli.Main("kafka bench", parseFlags, runBench, func(c config) string { return c.out }, printTable)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("kafka bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "a 10,000-event log and 3 timed requests (overrides -events and -requests)")
	fs.IntVar(&cfg.events, "events", 100_000, "events in the log the projector folds")
	fs.IntVar(&cfg.txnEvents, "txn-events", 500, "events per Kafka transaction when appending the log")
	fs.IntVar(&cfg.requests, "requests", 7, "timed evacuation requests per broker (after one warm-up); the median is reported")
	fs.DurationVar(&cfg.electionTimeout, "election-timeout", 6*time.Second, "the planners' --election-timeout (the election's session timeout; Kafka allows 6s at least by default)")
	fs.StringVar(&cfg.droveBin, "drove-bin", "", "the drove binary to run the planners from; empty: built into a temporary directory")
	fs.StringVar(&cfg.out, "out", "test/bench/results/kafka.json", "where to write the summary as JSON")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *quick {
		cfg.events, cfg.requests = 10_000, 3
	}
	var probs []string
	if cfg.events < 1000 {
		probs = append(probs, "-events must be at least 1000")
	}
	if cfg.txnEvents < 1 {
		probs = append(probs, "-txn-events must be at least 1")
	}
	if cfg.requests < 1 {
		probs = append(probs, "-requests must be at least 1")
	}
	if cfg.electionTimeout >= 15*time.Second {
		probs = append(probs, "-election-timeout must be under 15s")
	}
	if len(probs) > 0 {
		return cfg, errors.New(strings.Join(probs, "; "))
	}
	return cfg, nil
}

// summary is what the bench writes as JSON. The first six keys are a
// contract with whoever reads the results: a figure not measured is null.
type summary struct {
	ProjectorEPSApache        *float64 `json:"projector_eps_apache"`
	ProjectorEPSKfake         *float64 `json:"projector_eps_kfake"`
	PlanToFirstOpcodeMsApache *float64 `json:"plan_to_first_opcode_ms_apache"`
	PlanToFirstOpcodeMsKfake  *float64 `json:"plan_to_first_opcode_ms_kfake"`
	TakeoverS                 *float64 `json:"takeover_s"`
	BrokerKillToAppendS       *float64 `json:"broker_kill_to_append_s"`

	KafkaVersion string `json:"kafka_version"`
	cli.Host
	LoadStart string `json:"load_start,omitempty"`
	LoadEnd   string `json:"load_end,omitempty"`
	Events    int    `json:"events"`
	// The folds behind the two rates.
	FoldApache *foldResult `json:"fold_apache,omitempty"`
	FoldKfake  *foldResult `json:"fold_kfake,omitempty"`
	// The samples behind each median, in milliseconds, in order.
	PlanSamplesMsApache []float64 `json:"plan_samples_ms_apache,omitempty"`
	PlanSamplesMsKfake  []float64 `json:"plan_samples_ms_kfake,omitempty"`
	// ElectionTimeoutS is the planners' session timeout; TakeoverLeadingS
	// when the standby said it leads, after the SIGKILL.
	ElectionTimeoutS float64  `json:"election_timeout_s"`
	TakeoverLeadingS *float64 `json:"takeover_leading_s"`
	// BrokerSessionTimeoutMs is the 3-node cluster's
	// broker.session.timeout.ms; KilledBroker the node killed, leader of
	// KilledPartition; AppendAttempts the appends tried until one
	// succeeded.
	BrokerSessionTimeoutMs int      `json:"broker_session_timeout_ms"`
	KilledBroker           int      `json:"killed_broker,omitempty"`
	KilledPartition        string   `json:"killed_partition,omitempty"`
	AppendAttempts         int      `json:"append_attempts,omitempty"`
	Notes                  []string `json:"notes,omitempty"`
}

func (s *summary) note(format string, args ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, args...))
}

func newSummary(cfg config) *summary {
	return &summary{KafkaVersion: apachekafka.Version, Host: cli.ThisHost(), LoadStart: cli.LoadAvg(), Events: cfg.events,
		ElectionTimeoutS: cfg.electionTimeout.Seconds()}
}

func printTable(w io.Writer, s *summary) {
	f := func(v *float64, format string) string {
		if v == nil {
			return "not measured"
		}
		return fmt.Sprintf(format, *v)
	}
	fmt.Fprintf(w, "\nDrove on Apache Kafka %s vs kfake (%d CPUs, load %s -> %s)\n", s.KafkaVersion, s.CPUs, s.LoadStart, s.LoadEnd)
	fmt.Fprintf(w, "%-56s %16s %16s\n", "", "Apache Kafka", "kfake")
	fmt.Fprintf(w, "%-56s %16s %16s\n", fmt.Sprintf("projector fold of %d events (events/s)", s.Events),
		f(s.ProjectorEPSApache, "%.0f"), f(s.ProjectorEPSKfake, "%.0f"))
	cpu := func(r *foldResult) string {
		if r == nil {
			return "-"
		}
		return fmt.Sprintf("%.0f/%.0f/%.0f", r.CPU.Bench, r.CPU.Postgres, r.CPU.BrokerJVM)
	}
	fmt.Fprintf(w, "%-56s %16s %16s\n", "  its CPU s: bench (projector, kfake) / postgres / JVM", cpu(s.FoldApache), cpu(s.FoldKfake))
	fmt.Fprintf(w, "%-56s %16s %16s\n", "request -> first opcode dispatched (ms, p50)",
		f(s.PlanToFirstOpcodeMsApache, "%.0f"), f(s.PlanToFirstOpcodeMsKfake, "%.0f"))
	fmt.Fprintf(w, "%-56s %16s\n", fmt.Sprintf("planner takeover after SIGKILL (s; session %gs)", s.ElectionTimeoutS),
		f(s.TakeoverS, "%.2f"))
	fmt.Fprintf(w, "%-56s %16s\n", fmt.Sprintf("broker SIGKILL -> append (s; 3 nodes, session %dms)", s.BrokerSessionTimeoutMs),
		f(s.BrokerKillToAppendS, "%.2f"))
	for _, n := range s.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

func ptr(v float64) *float64 { return &v }
