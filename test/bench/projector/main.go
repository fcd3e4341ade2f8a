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
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/projector"
	"github.com/drovehq/drove/test/bench/cli"
	"github.com/drovehq/drove/test/bench/copylimit"
	"github.com/drovehq/drove/test/bench/cpu"
	"github.com/drovehq/drove/test/bench/eventlog"
)

type config struct {
	events     int
	txnEvents  int
	batch      int
	out        string
	cpuProfile string
	skipLive   bool
	skipAudit  bool
	brokers    []string
	kafka      string // the broker started when brokers are not given
	// postgres, when set, is an empty database to use instead of the
	// embedded server; postgresData its server's data directory, to read
	// the server's CPU (0 when not given).
	postgres, postgresData string
	copyRuns               int
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
	fs.BoolVar(&cfg.skipLive, "skip-live", false, "skip the live projector's catch-up (and so the replay's comparison and the COPY limit)")
	fs.BoolVar(&cfg.skipAudit, "skip-audit", false, "skip the auditor's figures (point in time, notary, verify-log)")
	fs.IntVar(&cfg.copyRuns, "copy-runs", 3, "COPYs of the event_log rows measured for the physical limit (the median is used)")
	kafkaFlag := cli.KafkaFlag(fs, "the broker the bench starts")
	brokers := fs.String("brokers", os.Getenv("DROVE_BENCH_BROKERS"),
		"comma-separated Kafka brokers with empty Drove topics to use instead of a broker the bench starts (env DROVE_BENCH_BROKERS)")
	fs.StringVar(&cfg.postgres, "postgres", "", "URL of an empty database to use instead of the embedded server")
	fs.StringVar(&cfg.postgresData, "postgres-data", "", "with -postgres: its server's data directory, to read the server's CPU")
	if err := cli.Parse(fs, args); err != nil {
		return cfg, err
	}
	if *quick {
		cfg.events = 10_000
	}
	cfg.kafka = *kafkaFlag
	if *brokers != "" {
		cfg.brokers = strings.Split(*brokers, ",")
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
	if cfg.copyRuns < 1 {
		probs = append(probs, "-copy-runs must be at least 1")
	}
	if p := cli.CheckKafka(cfg.kafka); p != "" {
		probs = append(probs, p)
	}
	if len(probs) > 0 {
		return cfg, errors.New(strings.Join(probs, "; "))
	}
	return cfg, nil
}

// summary is what the bench writes as JSON.
type summary struct {
	// The figures issue 32 asks for, each a ratio to Postgres taking the
	// same rows by COPY in the same run (test/bench/copylimit): the
	// projector's live catch-up and replay events per second over COPY's
	// rows per second into an empty table of event_log's shape (the
	// issue's words: its columns, sequence, keys and indexes); and the
	// same ratios to COPY into a bare table of its columns alone, the
	// stricter figure.
	LiveRatioToCopy       float64 `json:"live_ratio_to_copy"`
	ReplayRatioToCopy     float64 `json:"replay_ratio_to_copy"`
	CopyRowsPerSec        float64 `json:"copy_rows_per_s"`
	LiveEPS               float64 `json:"live_eps"`
	ReplayEPS             float64 `json:"replay_eps"`
	BareCopyRowsPerSec    float64 `json:"bare_copy_rows_per_s"`
	LiveRatioToBareCopy   float64 `json:"live_ratio_to_bare_copy"`
	ReplayRatioToBareCopy float64 `json:"replay_ratio_to_bare_copy"`
	// BenchCPUPer100k and PostgresCPUPer100k are the live catch-up's, all
	// fold; the replay's are its fold's, measured on the same fold again
	// without Replay's checksums (ReplayFold: AsOf, which also builds the
	// secondary indexes a replay that is dropped after it skips, so an
	// upper bound).
	BenchCPUPer100k          float64 `json:"bench_cpu_s_per_100k"`
	PostgresCPUPer100k       float64 `json:"postgres_cpu_s_per_100k"`
	ReplayBenchCPUPer100k    float64 `json:"replay_bench_cpu_s_per_100k"`
	ReplayPostgresCPUPer100k float64 `json:"replay_postgres_cpu_s_per_100k"`

	cli.Host
	LoadStart string         `json:"load_start,omitempty"`
	LoadEnd   string         `json:"load_end,omitempty"`
	Broker    string         `json:"broker"` // Apache Kafka's version, in-process (kfake), or the brokers given
	Events    int            `json:"events"`
	Types     map[string]int `json:"types"`
	// Transactions is how many Kafka transactions the log was appended in;
	// each leaves a commit marker per partition it wrote, which the
	// projector folds as well (Replay does not count them as events).
	Transactions  int               `json:"transactions"`
	BatchSize     int               `json:"batch_size"`
	AppendSeconds float64           `json:"append_seconds"`
	Copy          *copylimit.Result `json:"copy,omitempty"`
	Replay        *replayResult     `json:"replay,omitempty"`
	// ReplayFold is Replay's fold again, without its checksums, for its
	// CPU, and with the index builds of a kept schema (fold.go).
	ReplayFold *foldResult  `json:"replay_fold,omitempty"`
	Live       *liveResult  `json:"live,omitempty"`
	Audit      *auditResult `json:"audit,omitempty"` // audit.go
}

// cpuFigures is the CPU a phase spent per 100,000 events: this process's
// (the projector's Go code, and the in-process broker when it is used)
// and the Postgres server's; and this process's resident set before the
// phase and at its peak, in MiB.
type cpuFigures struct {
	BenchCPUPer100k    float64 `json:"bench_cpu_seconds_per_100k"`
	PostgresCPUPer100k float64 `json:"postgres_cpu_seconds_per_100k"`
	RSSBeforeMiB       float64 `json:"rss_before_mib"`
	RSSPeakMiB         float64 `json:"rss_peak_mib"`
	// HeapLiveGrowthMiB is the peak of the Go heap's live bytes over what
	// was live before the phase (rss.go): the projector's working set.
	HeapLiveGrowthMiB float64 `json:"heap_live_growth_mib"`
}

type replayResult struct {
	Events       int     `json:"events"`
	FoldSeconds  float64 `json:"fold_seconds"`
	EventsPerSec float64 `json:"events_per_second"`
	TotalSeconds float64 `json:"total_seconds"`
	// Equal is Replay's verdict: the rebuilt views equal the live ones
	// (false when the live catch-up was skipped).
	Equal bool `json:"equal"`
	// BenchCPUSeconds is this process's CPU during the whole Replay (the
	// projector's Go code and the in-process broker); PostgresCPUSeconds
	// the server's: the fold and the checksums of both schemas.
	BenchCPUSeconds    float64 `json:"bench_cpu_seconds"`
	PostgresCPUSeconds float64 `json:"postgres_cpu_seconds"`
	cpuFigures
}

type liveResult struct {
	CatchUpSeconds float64 `json:"catch_up_seconds"`
	EventsPerSec   float64 `json:"events_per_second"`
	// The CPU of the catch-up, which is all fold (Replay's also holds its
	// checksums).
	BenchCPUSeconds    float64 `json:"bench_cpu_seconds"`
	PostgresCPUSeconds float64 `json:"postgres_cpu_seconds"`
	cpuFigures
}

func runBench(ctx context.Context, cfg config, stdout io.Writer) (*summary, error) {
	s := &summary{Host: cli.ThisHost(), LoadStart: cli.LoadAvg()}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	env, err := startServices(ctx, cfg, quiet)
	defer env.stop()
	if err != nil {
		return nil, err
	}
	s.Broker = env.broker
	fmt.Fprintf(stdout, "broker: %s\n", s.Broker)
	pgCPU := func() float64 { return cpu.Postgres(env.pgData) }
	pool := env.pool

	if err := appendLog(ctx, cfg, env.brokers, s, stdout); err != nil {
		return nil, err
	}

	pcfg := projector.Config{Kafka: kafka.Config{Brokers: env.brokers, FetchMaxWait: 100 * time.Millisecond},
		BatchSize: cfg.batch, LagInterval: time.Second, Logger: quiet}
	s.BatchSize = cfg.batch
	if s.BatchSize == 0 {
		s.BatchSize = projector.DefaultBatchSize // for the record
	}
	if err := projector.ApplySchema(ctx, pool, "drove"); err != nil {
		return nil, err
	}
	if !cfg.skipLive {
		if err := liveAndCopy(ctx, cfg, pcfg, pool, pgCPU, s, stdout); err != nil {
			return nil, err
		}
	} else {
		pcfg.ReplayWait = -1
	}

	if err := copylimit.Settle(ctx, pool); err != nil {
		return nil, err
	}
	if s.Replay, err = replayOwnPool(ctx, cfg, pcfg, env.pgURL, pgCPU); err != nil {
		return nil, err
	}
	if err := copylimit.Settle(ctx, pool); err != nil {
		return nil, err
	}
	if s.ReplayFold, err = foldToEnd(ctx, pcfg, pool, pgCPU); err != nil {
		return nil, err
	}
	s.ReplayBenchCPUPer100k, s.ReplayPostgresCPUPer100k = s.ReplayFold.BenchCPUPer100k, s.ReplayFold.PostgresCPUPer100k
	if !cfg.skipAudit {
		if s.Audit, err = audit(ctx, pcfg, pool, s.Events, stdout); err != nil {
			return nil, err
		}
	}
	s.LoadEnd = cli.LoadAvg()
	r := s.Replay
	fmt.Fprintf(stdout, "projector replay: %d events folded in %.2fs = %.0f events/s (equal to live: %v; CPU: bench %.1fs, postgres %.1fs; load %s -> %s, %d CPUs)\n",
		r.Events, r.FoldSeconds, r.EventsPerSec, r.Equal, r.BenchCPUSeconds, r.PostgresCPUSeconds,
		s.LoadStart, s.LoadEnd, s.CPUs)
	s.fillRatios()
	printTable(stdout, s)
	return s, nil
}

// benchEnv is what the bench runs against: a broker and a Postgres, either
// given by flags or started here in a temporary directory.
type benchEnv struct {
	pgURL   string
	brokers []string
	broker  string // what the brokers are, for the record
	pgData  string
	pool    *pgxpool.Pool
	stops   []func() // run last first
}

// stop undoes whatever startServices got to, even when it failed half-way.
func (e *benchEnv) stop() {
	for i := len(e.stops) - 1; i >= 0; i-- {
		e.stops[i]()
	}
}

// startServices starts the broker and Postgres the flags do not name and
// connects to the database; the caller must call stop whatever the error.
func startServices(ctx context.Context, cfg config, quiet *slog.Logger) (*benchEnv, error) {
	e := &benchEnv{}
	tmp, err := os.MkdirTemp("", "drove-bench-projector-")
	if err != nil {
		return e, err
	}
	e.stops = append(e.stops, func() { os.RemoveAll(tmp) })
	// As root, Postgres runs as the postgres user, who must reach its dir.
	for d := tmp; d != "/" && d != filepath.Dir(os.TempDir()); d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	if err := e.startBroker(ctx, cfg, filepath.Join(tmp, "kafka"), quiet); err != nil {
		return e, err
	}
	pgURL, pgData := cfg.postgres, cfg.postgresData
	if pgURL == "" {
		pg, err := embedded.StartPostgres(ctx, embedded.Postgres{Dir: filepath.Join(tmp, "pg")})
		if err != nil {
			return e, err
		}
		e.stops = append(e.stops, func() { _ = pg.Stop() })
		if err := pg.EnsureDatabase(ctx, "drove"); err != nil {
			return e, err
		}
		pgURL, pgData = pg.URL("drove"), pg.DataDir
	}
	e.pgData, e.pgURL = pgData, pgURL
	if e.pool, err = pgxpool.New(ctx, pgURL); err != nil {
		return e, err
	}
	e.stops = append(e.stops, e.pool.Close)
	return e, nil
}

// startBroker uses the brokers the flags give, or starts the one -kafka
// names in dir.
func (e *benchEnv) startBroker(ctx context.Context, cfg config, dir string, quiet *slog.Logger) error {
	switch {
	case len(cfg.brokers) > 0:
		e.brokers, e.broker = cfg.brokers, strings.Join(cfg.brokers, ",")
	case cfg.kafka == cli.KafkaEmbedded:
		b, err := embedded.StartBroker(embedded.Broker{Dir: dir, Logger: quiet})
		if err != nil {
			return err
		}
		e.stops = append(e.stops, b.Stop)
		e.brokers, e.broker = b.Addrs(), "in-process (kfake)"
	default:
		c, err := apachekafka.Start(ctx, apachekafka.Options{Dir: dir})
		if err != nil {
			return fmt.Errorf("%w (-kafka embedded runs on kfake)", err)
		}
		e.stops = append(e.stops, func() { _ = c.Stop(10 * time.Second) })
		e.brokers, e.broker = c.Brokers(), "Apache Kafka "+apachekafka.Version
	}
	return nil
}

// appendLog builds the synthetic event log and appends it to the broker in
// transactions, timing the append.
func appendLog(ctx context.Context, cfg config, brokers []string, s *summary, stdout io.Writer) error {
	kcfg := kafka.Config{Brokers: brokers, TransactionalID: "bench-loader", FetchMaxWait: 100 * time.Millisecond}
	if err := kafka.EnsureTopics(ctx, kcfg, 3, events.Topics()...); err != nil {
		return err
	}
	w := eventlog.Build(cfg.events)
	s.Events, s.Types = w.Count, w.Types
	var mix []string
	for _, t := range keys(w.Types) {
		mix = append(mix, fmt.Sprintf("%s=%d", t, w.Types[t]))
	}
	fmt.Fprintf(stdout, "appending %d events: %s\n", w.Count, strings.Join(mix, " "))
	began := time.Now()
	var err error
	if s.Transactions, err = eventlog.Append(ctx, kcfg, w.Txs, cfg.txnEvents); err != nil {
		return err
	}
	s.AppendSeconds = time.Since(began).Seconds()
	fmt.Fprintf(stdout, "appended in %d transactions in %.1fs\n", s.Transactions, s.AppendSeconds)
	return nil
}

// liveAndCopy times a live projector catching up from zero, then Postgres's
// COPY of the same rows, the ceiling the projector is measured against.
func liveAndCopy(ctx context.Context, cfg config, pcfg projector.Config, pool *pgxpool.Pool, pgCPU func() float64, s *summary, stdout io.Writer) error {
	var err error
	if s.Live, err = liveCatchUp(ctx, pcfg, pool, pgCPU, s.Events); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "live projector caught up from zero in %.2fs = %.0f events/s (CPU: bench %.1fs, postgres %.1fs)\n",
		s.Live.CatchUpSeconds, s.Live.EventsPerSec, s.Live.BenchCPUSeconds, s.Live.PostgresCPUSeconds)
	if s.Copy, err = copylimit.Measure(ctx, pool, pgCPU, cfg.copyRuns); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "COPY of the %d event_log rows: %.0f rows/s into a bare table (runs %.0f), %.0f into event_log's shape (runs %.0f)\n",
		s.Copy.Rows, s.Copy.BareRowsPerSec, s.Copy.BareRuns, s.Copy.ShapeRowsPerSec, s.Copy.ShapeRuns)
	return nil
}

// fillRatios copies the headline figures to the summary's top level and
// compares the projector's rates with COPY's.
func (s *summary) fillRatios() {
	s.ReplayEPS = s.Replay.EventsPerSec
	if s.Live != nil {
		s.LiveEPS = s.Live.EventsPerSec
		s.BenchCPUPer100k, s.PostgresCPUPer100k = s.Live.BenchCPUPer100k, s.Live.PostgresCPUPer100k
	}
	if s.Copy != nil {
		s.CopyRowsPerSec = s.Copy.ShapeRowsPerSec
		s.LiveRatioToCopy = s.LiveEPS / s.CopyRowsPerSec
		s.ReplayRatioToCopy = s.ReplayEPS / s.CopyRowsPerSec
		s.BareCopyRowsPerSec = s.Copy.BareRowsPerSec
		s.LiveRatioToBareCopy = s.LiveEPS / s.BareCopyRowsPerSec
		s.ReplayRatioToBareCopy = s.ReplayEPS / s.BareCopyRowsPerSec
	}
}

// liveCatchUp runs a projector on the empty live schema and times it until
// its offsets reach the end of every partition and the indexes it deferred
// are built.
func liveCatchUp(ctx context.Context, pcfg projector.Config, pool *pgxpool.Pool, pgCPU func() float64, evs int) (*liveResult, error) {
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
	rss := sampleRSS() // first: its collection is not the phase's CPU
	selfBefore, pgBefore := cpu.Self(), pgCPU()
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
	res := &liveResult{CatchUpSeconds: d.Seconds(), EventsPerSec: float64(evs) / d.Seconds(),
		BenchCPUSeconds: cpu.Self() - selfBefore, PostgresCPUSeconds: pgCPU() - pgBefore}
	res.BenchCPUPer100k, res.PostgresCPUPer100k = cpu.Per100k(res.BenchCPUSeconds, evs), cpu.Per100k(res.PostgresCPUSeconds, evs)
	res.RSSBeforeMiB, res.RSSPeakMiB = rss.done()
	res.HeapLiveGrowthMiB = rss.liveGrowthMiB()
	return res, nil
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
	// A catch-up from an empty schema builds its secondary indexes after
	// its last batch (projector/bulk.go): it is done when they are built.
	var deferred int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM drove.projector_deferred_indexes`).Scan(&deferred); err != nil {
		return false, err
	}
	return deferred == 0, nil
}

// replayOwnPool runs replay on connections of its own, as `drove replay`,
// a process of its own, does. On the connections that had just created,
// filled and dropped the COPY limit's schemas, the same replay of
// 1,000,000 events folded at about half the rate (43,000 against 85,600
// events/s, in the same kind of run with a fresh pool). The statements
// they kept prepared cost it: the same connections after DeallocateAll
// folded at 87,750.
func replayOwnPool(ctx context.Context, cfg config, pcfg projector.Config, url string, pgCPU func() float64) (*replayResult, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	return replay(ctx, cfg, pcfg, pool, pgCPU)
}

// replay runs projector.Replay, with a CPU profile of this process when
// asked, and the CPU both sides spent.
func replay(ctx context.Context, cfg config, pcfg projector.Config, pool *pgxpool.Pool, pgCPU func() float64) (*replayResult, error) {
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
	rss := sampleRSS() // first: its collection is not the phase's CPU
	selfBefore, pgBefore := cpu.Self(), pgCPU()
	rep, err := projector.Replay(ctx, pcfg, pool)
	rssBefore, rssPeak := rss.done()
	if err != nil {
		return nil, err
	}
	// The fold is most of Replay; the CPU is measured over all of it.
	selfAfter, pgAfter := cpu.Self(), pgCPU()
	if !rep.Equal {
		for _, t := range rep.Tables {
			if !t.Equal {
				fmt.Fprintf(os.Stderr, "bench: table %s differs: live %d rows, replay %d rows\n", t.Name, t.LiveRows, t.ReplayRows)
			}
		}
	}
	fold := rep.FoldDuration.Seconds()
	res := &replayResult{Events: rep.Events, FoldSeconds: fold, EventsPerSec: float64(rep.Events) / fold,
		TotalSeconds: rep.Duration.Seconds(), Equal: rep.Equal,
		BenchCPUSeconds: selfAfter - selfBefore, PostgresCPUSeconds: pgAfter - pgBefore}
	res.BenchCPUPer100k = cpu.Per100k(res.BenchCPUSeconds, rep.Events)
	res.PostgresCPUPer100k = cpu.Per100k(res.PostgresCPUSeconds, rep.Events)
	res.RSSBeforeMiB, res.RSSPeakMiB = rssBefore, rssPeak
	res.HeapLiveGrowthMiB = rss.liveGrowthMiB()
	return res, nil
}

// printTable prints the figures issue 32 asks for.
func printTable(w io.Writer, s *summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tevents/s\tto COPY\tto COPY, bare table\tbench CPU s/100k\tpostgres CPU s/100k\tRSS before MiB\tRSS peak MiB\tlive heap growth MiB\t")
	ratio := func(eps, copy float64) string {
		if copy == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", eps/copy)
	}
	if c := s.Copy; c != nil {
		fmt.Fprintf(tw, "COPY into event_log's shape\t%.0f\t1.00\t%s\t-\t%.2f\t-\t-\t-\t\n", c.ShapeRowsPerSec,
			ratio(c.ShapeRowsPerSec, c.BareRowsPerSec), c.ShapePostgresCPUPer100k)
		fmt.Fprintf(tw, "COPY into a bare table\t%.0f\t%s\t1.00\t-\t%.2f\t-\t-\t-\t\n", c.BareRowsPerSec,
			ratio(c.BareRowsPerSec, c.ShapeRowsPerSec), c.BarePostgresCPUPer100k)
	}
	if l := s.Live; l != nil {
		fmt.Fprintf(tw, "live catch-up\t%.0f\t%s\t%s\t%.2f\t%.2f\t%.0f\t%.0f\t%.0f\t\n", l.EventsPerSec,
			ratio(l.EventsPerSec, s.CopyRowsPerSec), ratio(l.EventsPerSec, s.BareCopyRowsPerSec),
			l.BenchCPUPer100k, l.PostgresCPUPer100k, l.RSSBeforeMiB, l.RSSPeakMiB, l.HeapLiveGrowthMiB)
	}
	if r := s.Replay; r != nil {
		fmt.Fprintf(tw, "replay (CPU with checksums)\t%.0f\t%s\t%s\t%.2f\t%.2f\t%.0f\t%.0f\t%.0f\t\n", r.EventsPerSec,
			ratio(r.EventsPerSec, s.CopyRowsPerSec), ratio(r.EventsPerSec, s.BareCopyRowsPerSec),
			r.BenchCPUPer100k, r.PostgresCPUPer100k, r.RSSBeforeMiB, r.RSSPeakMiB, r.HeapLiveGrowthMiB)
	}
	if f := s.ReplayFold; f != nil {
		fmt.Fprintf(tw, "replay's fold again, indexes built (AsOf to the end)\t%.0f\t%s\t%s\t%.2f\t%.2f\t%.0f\t%.0f\t%.0f\t\n", f.EventsPerSec,
			ratio(f.EventsPerSec, s.CopyRowsPerSec), ratio(f.EventsPerSec, s.BareCopyRowsPerSec),
			f.BenchCPUPer100k, f.PostgresCPUPer100k, f.RSSBeforeMiB, f.RSSPeakMiB, f.HeapLiveGrowthMiB)
	}
	_ = tw.Flush()
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
