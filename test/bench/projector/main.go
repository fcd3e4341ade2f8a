package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/projector"
	"github.com/drovehq/drove/test/bench/cli"
)

type config struct {
	events     int
	txnEvents  int
	batch      int
	out        string
	cpuProfile string
	skipLive   bool
}

func main() {
	os.Exit(cli.Run("bench", os.Args[1:], os.Stderr, parseFlags, func(ctx context.Context, cfg config) int {
		return run(ctx, cfg, os.Stdout, os.Stderr)
	}))
}

func run(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	s, err := runBench(ctx, cfg, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	if err := cli.WriteJSON(cfg.out, s); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "summary written to %s\n", cfg.out)
	if s.Replay != nil && !s.Replay.Equal {
		return 1 // the fold is fast but wrong: that is a failure, not a figure
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("projector bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "a 10,000-event log (overrides -events)")
	fs.IntVar(&cfg.events, "events", 100_000, "events in the log")
	fs.IntVar(&cfg.txnEvents, "txn-events", 500, "events per Kafka transaction when loading the log")
	fs.IntVar(&cfg.batch, "batch", 0, "the projector's BatchSize; 0 is its default")
	fs.StringVar(&cfg.out, "out", "test/bench/results/projector.json", "where to write the summary as JSON")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of this process during the replay fold")
	fs.BoolVar(&cfg.skipLive, "skip-live", false, "skip the live projector's catch-up (and so the replay's comparison)")
	if err := cli.Parse(fs, args); err != nil {
		return cfg, err
	}
	if *quick {
		cfg.events = 10_000
	}
	var probs []string
	if cfg.events < 1000 {
		probs = append(probs, "-events must be at least 1000")
	}
	if cfg.txnEvents < 1 {
		probs = append(probs, "-txn-events must be at least 1")
	}
	if cfg.batch < 0 {
		probs = append(probs, "-batch must not be negative")
	}
	if len(probs) > 0 {
		return cfg, errors.New(strings.Join(probs, "; "))
	}
	return cfg, nil
}

// summary is what the bench writes as JSON.
type summary struct {
	Date      string         `json:"date"`
	GoVersion string         `json:"go_version"`
	CPUs      int            `json:"cpus"`
	LoadStart string         `json:"load_start,omitempty"`
	LoadEnd   string         `json:"load_end,omitempty"`
	Events    int            `json:"events"`
	Types     map[string]int `json:"types"`
	// Transactions is how many Kafka transactions the log was appended in;
	// each leaves a commit marker per partition it wrote, which the
	// projector folds as well (Replay does not count them as events).
	Transactions  int           `json:"transactions"`
	BatchSize     int           `json:"batch_size"`
	AppendSeconds float64       `json:"append_seconds"`
	Replay        *replayResult `json:"replay,omitempty"`
	Live          *liveResult   `json:"live,omitempty"`
	Audit         *auditResult  `json:"audit,omitempty"` // audit.go
}

type replayResult struct {
	Events       int     `json:"events"`
	FoldSeconds  float64 `json:"fold_seconds"`
	EventsPerSec float64 `json:"events_per_second"`
	TotalSeconds float64 `json:"total_seconds"`
	// Equal is Replay's verdict: the rebuilt views equal the live ones
	// (false when the live catch-up was skipped).
	Equal bool `json:"equal"`
	// BenchCPUSeconds is this process's CPU during the fold (the projector's
	// Go code and the embedded broker); PostgresCPUSeconds the server's.
	BenchCPUSeconds    float64 `json:"bench_cpu_seconds"`
	PostgresCPUSeconds float64 `json:"postgres_cpu_seconds"`
}

type liveResult struct {
	CatchUpSeconds float64 `json:"catch_up_seconds"`
	EventsPerSec   float64 `json:"events_per_second"`
	// The CPU of the catch-up, which is all fold (Replay's also holds its
	// checksums).
	BenchCPUSeconds    float64 `json:"bench_cpu_seconds"`
	PostgresCPUSeconds float64 `json:"postgres_cpu_seconds"`
}

func runBench(ctx context.Context, cfg config, stdout io.Writer) (*summary, error) {
	s := &summary{Date: time.Now().UTC().Format(time.RFC3339), GoVersion: runtime.Version(),
		CPUs: runtime.NumCPU(), LoadStart: loadAvg()}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	tmp, err := os.MkdirTemp("", "drove-bench-projector-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// As root, Postgres runs as the postgres user, who must reach its dir.
	for d := tmp; d != "/" && d != filepath.Dir(os.TempDir()); d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	broker, err := embedded.StartBroker(embedded.Broker{Dir: filepath.Join(tmp, "kafka"), Logger: quiet})
	if err != nil {
		return nil, err
	}
	defer broker.Stop()
	pg, err := embedded.StartPostgres(ctx, embedded.Postgres{Dir: filepath.Join(tmp, "pg")})
	if err != nil {
		return nil, err
	}
	defer func() { _ = pg.Stop() }()
	if err := pg.EnsureDatabase(ctx, "drove"); err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(ctx, pg.URL("drove"))
	if err != nil {
		return nil, err
	}
	defer pool.Close()

	kcfg := kafka.Config{Brokers: broker.Addrs(), TransactionalID: "bench-loader", FetchMaxWait: 100 * time.Millisecond}
	if err := kafka.EnsureTopics(ctx, kcfg, 3, events.Topics()...); err != nil {
		return nil, err
	}
	w := buildWorkload(cfg.events)
	s.Events, s.Types = w.count, w.types
	var mix []string
	for _, t := range keys(w.types) {
		mix = append(mix, fmt.Sprintf("%s=%d", t, w.types[t]))
	}
	fmt.Fprintf(stdout, "appending %d events: %s\n", w.count, strings.Join(mix, " "))
	began := time.Now()
	if s.Transactions, err = appendLog(ctx, kcfg, w.txs, cfg.txnEvents); err != nil {
		return nil, err
	}
	s.AppendSeconds = time.Since(began).Seconds()
	fmt.Fprintf(stdout, "appended in %d transactions in %.1fs\n", s.Transactions, s.AppendSeconds)

	pcfg := projector.Config{Kafka: kafka.Config{Brokers: broker.Addrs(), FetchMaxWait: 100 * time.Millisecond},
		BatchSize: cfg.batch, LagInterval: time.Second, Logger: quiet}
	s.BatchSize = cfg.batch
	if s.BatchSize == 0 {
		s.BatchSize = 2000 // projector's default, for the record
	}
	if err := projector.ApplySchema(ctx, pool, "drove"); err != nil {
		return nil, err
	}
	if !cfg.skipLive {
		if s.Live, err = liveCatchUp(ctx, pcfg, pool, pg, s.Events); err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "live projector caught up from zero in %.2fs = %.0f events/s (CPU: bench %.1fs, postgres %.1fs)\n",
			s.Live.CatchUpSeconds, s.Live.EventsPerSec, s.Live.BenchCPUSeconds, s.Live.PostgresCPUSeconds)
	} else {
		pcfg.ReplayWait = -1
	}

	if s.Replay, err = replay(ctx, cfg, pcfg, pool, pg); err != nil {
		return nil, err
	}
	if s.Audit, err = audit(ctx, pcfg, pool, s.Events, stdout); err != nil {
		return nil, err
	}
	s.LoadEnd = loadAvg()
	r := s.Replay
	fmt.Fprintf(stdout, "projector replay: %d events folded in %.2fs = %.0f events/s (equal to live: %v; CPU: bench %.1fs, postgres %.1fs; load %s -> %s, %d CPUs)\n",
		r.Events, r.FoldSeconds, r.EventsPerSec, r.Equal, r.BenchCPUSeconds, r.PostgresCPUSeconds,
		s.LoadStart, s.LoadEnd, s.CPUs)
	return s, nil
}

// appendLog appends the workload's transactions, merging consecutive ones
// until a transaction holds at least per events, and returns how many
// transactions it appended.
func appendLog(ctx context.Context, kcfg kafka.Config, txs [][]kafka.Message, per int) (int, error) {
	prod, err := kafka.NewProducer(kcfg)
	if err != nil {
		return 0, err
	}
	defer prod.Close()
	n := 0
	var cur []kafka.Message
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		n++
		err := prod.AppendBatch(ctx, cur...)
		cur = cur[:0]
		return err
	}
	for _, tx := range txs {
		cur = append(cur, tx...)
		if len(cur) >= per {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	return n, flush()
}

// liveCatchUp runs a projector on the empty live schema and times it until
// its offsets reach the end of every partition.
func liveCatchUp(ctx context.Context, pcfg projector.Config, pool *pgxpool.Pool, pg *embedded.PostgresServer, evs int) (*liveResult, error) {
	ends, err := logEnds(ctx, pcfg.Kafka.Brokers)
	if err != nil {
		return nil, err
	}
	p, err := projector.New(pcfg, pool)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	selfBefore, pgBefore := selfCPU(), postgresCPU(pg.Dir)
	began := time.Now()
	go func() { done <- p.Run(rctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.After(30 * time.Minute)
	for {
		caught, err := caughtUp(ctx, pool, ends)
		if err != nil {
			return nil, err
		}
		if caught {
			break
		}
		select {
		case err := <-done:
			done <- err // for the deferred wait
			return nil, fmt.Errorf("live projector stopped: %v", err)
		case <-deadline:
			return nil, errors.New("live projector did not catch up in 30 minutes")
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond): // polling a condition under a deadline
		}
	}
	d := time.Since(began)
	return &liveResult{CatchUpSeconds: d.Seconds(), EventsPerSec: float64(evs) / d.Seconds(),
		BenchCPUSeconds: selfCPU() - selfBefore, PostgresCPUSeconds: postgresCPU(pg.Dir) - pgBefore}, nil
}

type part = kafka.TopicPartition

// logEnds lists the last stable offset of every partition, as the
// projector does.
func logEnds(ctx context.Context, brokers []string) (kafka.Positions, error) {
	r, err := kafka.NewReader(ctx, kafka.Config{Brokers: brokers}, kafka.ReadOptions{Topics: events.Topics()})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Ends(), nil
}

func caughtUp(ctx context.Context, pool *pgxpool.Pool, ends kafka.Positions) (bool, error) {
	rows, err := pool.Query(ctx, `SELECT topic, partition, next_offset FROM drove.projector_offsets`)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	have := map[part]int64{}
	for rows.Next() {
		var k part
		var n int64
		if err := rows.Scan(&k.Topic, &k.Partition, &n); err != nil {
			return false, err
		}
		have[k] = n
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	for k, end := range ends {
		if end > 0 && have[k] < end {
			return false, nil
		}
	}
	return true, nil
}

// replay runs projector.Replay, with a CPU profile of this process when
// asked, and the CPU both sides spent.
func replay(ctx context.Context, cfg config, pcfg projector.Config, pool *pgxpool.Pool, pg *embedded.PostgresServer) (*replayResult, error) {
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	selfBefore, pgBefore := selfCPU(), postgresCPU(pg.Dir)
	rep, err := projector.Replay(ctx, pcfg, pool)
	if err != nil {
		return nil, err
	}
	// The fold is most of Replay; the CPU is measured over all of it.
	selfAfter, pgAfter := selfCPU(), postgresCPU(pg.Dir)
	if !rep.Equal {
		for _, t := range rep.Tables {
			if !t.Equal {
				fmt.Fprintf(os.Stderr, "bench: table %s differs: live %d rows, replay %d rows\n", t.Name, t.LiveRows, t.ReplayRows)
			}
		}
	}
	fold := rep.FoldDuration.Seconds()
	return &replayResult{Events: rep.Events, FoldSeconds: fold, EventsPerSec: float64(rep.Events) / fold,
		TotalSeconds: rep.Duration.Seconds(), Equal: rep.Equal,
		BenchCPUSeconds: selfAfter - selfBefore, PostgresCPUSeconds: pgAfter - pgBefore}, nil
}

// loadAvg is /proc/loadavg's three load averages, or "" off Linux.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// keys is for stable printing of the type counts.
func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
