package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/deploy/supervise"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/iallocator"
	"github.com/drovehq/drove/planner/service"
	"github.com/drovehq/drove/projector"
)

// serviceFlags are what every service takes: where Kafka and Postgres are,
// where to serve metrics, how to log.
type serviceFlags struct {
	brokers     string
	databaseURL string
	schema      string
	metricsAddr string
	logLevel    string
	security    kafkaSecurity
	// partitions is what topics are created with; allowFiniteRetention
	// lets services run over topics that delete events (EnsureTopics).
	partitions           int
	allowFiniteRetention bool
	// replicas and minInsync are what topics are created with: how many
	// brokers hold each partition, and how many must have an event before
	// an append of it is acknowledged.
	replicas, minInsync int
}

// envInt is the integer in environment variable name, or def when unset;
// -1 when it is not a number, which the configuration then refuses.
func envInt(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return -1
	}
	return n
}

// envBool is environment variable name as a flag's default: 1, true, yes.
func envBool(name string) bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(name))) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

func (s *serviceFlags) register(fs *flag.FlagSet, needsDB bool) {
	brokers := os.Getenv("KAFKA_BROKERS")
	if brokers == "" {
		brokers = embedded.DefaultBrokerAddr
	}
	fs.StringVar(&s.brokers, "brokers", brokers, "Kafka brokers, comma-separated (env KAFKA_BROKERS)")
	s.security.register(fs)
	fs.IntVar(&s.partitions, "partitions", envInt("DROVE_PARTITIONS", 3),
		"partitions of each topic this service creates; existing topics keep theirs (env DROVE_PARTITIONS). An executor reads 1/partitions of the opcodes: production wants 12 or more")
	fs.IntVar(&s.replicas, "replication-factor", envInt("DROVE_REPLICATION_FACTOR", -1),
		"replicas of each partition of the topics this service creates; -1: the broker's default.replication.factor (env DROVE_REPLICATION_FACTOR). Production wants 3")
	fs.IntVar(&s.minInsync, "min-insync-replicas", envInt("DROVE_MIN_INSYNC_REPLICAS", 0),
		"replicas that must hold an event before its append is acknowledged, on the topics this service creates; 0: 2 with 3 or more replicas, else 1 (env DROVE_MIN_INSYNC_REPLICAS)")
	fs.BoolVar(&s.allowFiniteRetention, "allow-finite-retention", envBool("DROVE_ALLOW_FINITE_RETENTION"),
		"run even if an existing topic would delete events (finite retention, compaction); replays then miss what the broker deleted (env DROVE_ALLOW_FINITE_RETENTION)")
	if needsDB {
		dbURL := os.Getenv("DATABASE_URL")
		if dbURL == "" {
			dbURL = embedded.DefaultDatabaseURL()
		}
		fs.StringVar(&s.databaseURL, "database-url", dbURL, "PostgreSQL connection string (env DATABASE_URL; default: the embedded one of `drove dev`)")
		fs.StringVar(&s.schema, "schema", "drove", "the Postgres schema of the views")
	}
	fs.StringVar(&s.metricsAddr, "metrics-addr", "", "serve /metrics and /healthz here (e.g. :9100); empty: off")
	fs.StringVar(&s.logLevel, "log-level", "info", "debug, info, warn or error")
}

func (s *serviceFlags) kafka(clientID string) kafka.Config {
	cfg := kafka.Config{ClientID: clientID}
	for _, b := range strings.Split(s.brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			cfg.Brokers = append(cfg.Brokers, b)
		}
	}
	s.security.apply(&cfg)
	cfg.AllowFiniteRetention = s.allowFiniteRetention
	cfg.ReplicationFactor, cfg.MinInsyncReplicas = int16(s.replicas), s.minInsync
	return cfg
}

func (s *serviceFlags) logger(stderr io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s.logLevel)); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

func (s *serviceFlags) pool(ctx context.Context) (*pgxpool.Pool, error) {
	if s.databaseURL == "" {
		return nil, errors.New("no database: set DATABASE_URL or --database-url")
	}
	return pgxpool.New(ctx, s.databaseURL)
}

// answering checks that the database answers, so that a one-shot command
// (replay) run with nothing to talk to says so at once and how to fix it.
// Services do not: they wait for a database that is still starting.
func answering(ctx context.Context, pool *pgxpool.Pool) error {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		cfg := pool.Config().ConnConfig
		return fmt.Errorf("no database answers at %s:%d (is `make run` running? otherwise set DATABASE_URL or --database-url): %w",
			cfg.Host, cfg.Port, err)
	}
	return nil
}

// newRegistry is a metrics registry with the Go runtime's collectors.
func newRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// serveMetrics serves /metrics and /healthz until ctx ends.
func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry, log *slog.Logger) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"status":"ok"}`)
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "addr", addr, "err", err)
		}
	}()
}

// signalContext ends on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func fail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "drove %s: %v\n", cmd, err)
	return exitError
}

func runGatewayCmd(args []string, _ io.Reader, _, stderr io.Writer) int {
	fs := newFlagSet("gateway", `
Usage: drove gateway [flags]

Serves Drove's HTTP API: requests (evacuations, group changes, approvals,
cancellations), queries of the views, watch streams, /healthz and /metrics.`, stderr)
	var sf serviceFlags
	sf.register(fs, true)
	addr := fs.String("addr", "localhost:8080", "where to listen")
	tokensFile := fs.String("tokens-file", os.Getenv("DROVE_TOKENS_FILE"), "bearer tokens, TOKEN=ACCOUNT:ROLE a line (role operator or owner), mode 0600 (env DROVE_TOKENS_FILE); also env DROVE_TOKENS, comma-separated. None: no authentication, everyone is an operator")
	if _, err := parse(fs, args); err != nil {
		return flagExit(err)
	}
	tokens, err := loadTokens(*tokensFile)
	if err != nil {
		return fail(stderr, "gateway", err)
	}
	ctx, stop := signalContext()
	defer stop()
	log := sf.logger(stderr)
	pool, err := sf.pool(ctx)
	if err != nil {
		return fail(stderr, "gateway", err)
	}
	defer pool.Close()
	kcfg := sf.kafka("drove-gateway")
	// Gateways are stateless and may run side by side: each needs its own
	// transactional id, or they would fence each other.
	host, _ := os.Hostname()
	kcfg.TransactionalID = fmt.Sprintf("drove-gateway-%s-%d", host, os.Getpid())
	kcfg.SoleOwner = true
	reg := newRegistry()
	// The pool and the producer reconnect by themselves; what stops the
	// server (topics not there yet, the listener) is restarted.
	err = supervise.Run(ctx, supervise.Part{Name: "gateway", Log: log}, func(ctx context.Context) error {
		if err := kafka.EnsureTopics(ctx, kcfg, sf.partitions, events.Topics()...); err != nil {
			return err
		}
		prod, err := kafka.NewProducer(kcfg)
		if err != nil {
			return err
		}
		defer prod.Close()
		g, err := gateway.New(gateway.Config{Addr: *addr, Schema: sf.schema, Logger: log, Metrics: reg,
			KafkaCheck: prod.Ping, Tokens: tokens,
			PointInTime: allinone.PointInTime(projector.Config{Kafka: sf.kafka("drove-asof"), Schema: sf.schema, Logger: log}, pool)}, pool, prod)
		if err != nil {
			return err
		}
		return g.Run(ctx)
	})
	if err != nil {
		return fail(stderr, "gateway", err)
	}
	return exitOK
}

func runPlannerCmd(args []string, _ io.Reader, _, stderr io.Writer) int {
	fs := newFlagSet("planner", `
Usage: drove planner [flags]

Runs the planner service: turns requests into plans, marks evacuated nodes
drained, releases jobs as their dependencies are met and within per-node and
per-cluster limits, and closes each request with what moved and what did
not. Run several: they elect one through Kafka's group membership; the
others stand by and take over within seconds when it dies (--standby).`, stderr)
	var sf serviceFlags
	sf.register(fs, false)
	maxRunning := fs.Int("max-running-moves", 5, "jobs running at once across the cluster")
	perNode := movesPerNode{n: 2}
	fs.Var(&perNode, "max-moves-per-node", "moves a node sends at once: a number, or auto (as many as the node's link has room for)")
	nodeLease := fs.Duration("node-lease", 30*time.Second, "declare a node lost (offline) when its executor sent no heartbeat for this long; keep it above the executors' --fence")
	snapshotDir := fs.String("snapshot-dir", os.Getenv("DROVE_PLANNER_SNAPSHOT_DIR"), "where the planner keeps a snapshot of its state, so a start reads only the log after it (env DROVE_PLANNER_SNAPSHOT_DIR); empty: every start replays the whole log")
	election := fs.Duration("election-timeout", 6*time.Second, "with --standby: how long a leader may be silent before a standby takes over (the election group's session timeout; the brokers allow 6s to 30m unless configured otherwise)")
	standby := fs.Bool("standby", true, "run several: they elect one that decides, the others stand by and take over when it dies; false: this one decides at once and fences any other")
	if _, err := parse(fs, args); err != nil {
		return flagExit(err)
	}
	ctx, stop := signalContext()
	defer stop()
	log := sf.logger(stderr)
	reg := newRegistry()
	serveMetrics(ctx, sf.metricsAddr, reg, log)
	cfg := service.Config{Kafka: sf.kafka("drove-planner"), Partitions: sf.partitions, MaxRunningMoves: *maxRunning,
		Logger: log, Metrics: reg}
	// The flag changes one option: the rest keep the planner's defaults.
	cfg.Options = planner.DefaultOptions()
	cfg.Options.MaxMovesPerNode, cfg.AutoMovesPerNode = perNode.n, perNode.auto
	cfg.Standby, cfg.ElectionTimeout = *standby, *election
	cfg.NodeLease = *nodeLease
	cfg.SnapshotDir = *snapshotDir
	part := supervise.Part{Name: "planner", Log: log}
	if *standby {
		// Fenced means another instance leads now: stand by again.
		part.Permanent = func(err error) bool { return !errors.Is(err, kafka.ErrFenced) && supervise.Permanent(err) }
	}
	err := supervise.Run(ctx, part, func(ctx context.Context) error {
		s, err := service.New(cfg)
		if err != nil {
			return err
		}
		return s.Run(ctx)
	})
	if err != nil {
		return fail(stderr, "planner", err)
	}
	return exitOK
}

func runProjectorCmd(args []string, _ io.Reader, _, stderr io.Writer) int {
	fs := newFlagSet("projector", `
Usage: drove projector [flags]

Folds every topic of the log into the Postgres views, exactly once (each
event's effect commits with its offset).`, stderr)
	var sf serviceFlags
	sf.register(fs, true)
	if _, err := parse(fs, args); err != nil {
		return flagExit(err)
	}
	ctx, stop := signalContext()
	defer stop()
	log := sf.logger(stderr)
	pool, err := sf.pool(ctx)
	if err != nil {
		return fail(stderr, "projector", err)
	}
	defer pool.Close()
	reg := newRegistry()
	serveMetrics(ctx, sf.metricsAddr, reg, log)
	// Postgres or the broker restarting ends a Run; the next one resumes
	// from the offsets the views recorded.
	err = supervise.Run(ctx, supervise.Part{Name: "projector", Log: log}, func(ctx context.Context) error {
		if err := projector.ApplySchema(ctx, pool, sf.schema); err != nil {
			return err
		}
		p, err := projector.New(projector.Config{Kafka: sf.kafka("drove-projector"), Partitions: sf.partitions,
			Schema: sf.schema, Logger: log, Registerer: reg}, pool)
		if err != nil {
			return err
		}
		return p.Run(ctx)
	})
	if err != nil {
		return fail(stderr, "projector", err)
	}
	return exitOK
}

func runReplay(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("replay", `
Usage: drove replay [flags]

Audit replay: folds the whole log from offset zero into a fresh schema and
compares it, table by table, with the live views (a checksum per table).
Exit status 0 when every table is equal, 3 when one differs.

Point in time: --at TIME (RFC 3339) or --at TOPIC/PARTITION@OFFSET,...
folds the log up to that moment (each partition up to its first record
stamped after TIME, or up to the offsets given, exclusive; partitions not
given are not folded) into a schema kept until --drop NAME, and prints its
name: query it with plain SQL (SET search_path TO NAME). --list lists them.
The gateway answers GET /v1/instances?at=TIME and /v1/nodes?at=TIME from
the same schemas.`, stderr)
	var sf serviceFlags
	sf.register(fs, true)
	keep := fs.Bool("keep", false, "keep the replay schema for inspection")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	var pit pointInTimeFlags
	pit.register(fs)
	if _, err := parse(fs, args); err != nil {
		return flagExit(err)
	}
	if pit.set() {
		return runPointInTime(sf, pit, *asJSON, stdout, stderr)
	}
	ctx, stop := signalContext()
	defer stop()
	pool, err := sf.pool(ctx)
	if err != nil {
		return fail(stderr, "replay", err)
	}
	defer pool.Close()
	if err := answering(ctx, pool); err != nil {
		return fail(stderr, "replay", err)
	}
	rep, err := projector.Replay(ctx, projector.Config{Kafka: sf.kafka("drove-replay"), Schema: sf.schema,
		KeepReplay: *keep, Logger: sf.logger(stderr)}, pool)
	if err != nil {
		return fail(stderr, "replay", err)
	}
	return printReplay(stdout, rep, *asJSON)
}

func printReplay(w io.Writer, rep projector.Report, asJSON bool) int {
	if asJSON {
		printJSON(w, rep)
	} else {
		fmt.Fprintf(w, "Replayed %d events in %s into %s\n", rep.Events, rep.Duration.Round(time.Millisecond), rep.ReplaySchema)
		for _, t := range rep.Tables {
			mark := "equal"
			if !t.Equal {
				mark = "DIFFERENT"
			}
			fmt.Fprintf(w, "  %-22s live %7d rows  replay %7d rows  %s\n", t.Name, t.LiveRows, t.ReplayRows, mark)
		}
		if rep.Equal {
			fmt.Fprintln(w, "Every view equals its replay from offset zero.")
		} else {
			fmt.Fprintln(w, "Some views differ from the replay.")
		}
	}
	if !rep.Equal {
		return exitNotMoved
	}
	return exitOK
}

func runBroker(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("broker", `
Usage: drove broker [flags]

Runs the embedded Kafka-protocol broker alone (franz-go's kfake, persisted
in a directory), for running Drove's services separately on one machine
without Apache Kafka.`, stderr)
	dir := fs.String("dir", ".drove/kafka", "data directory")
	addr := fs.String("addr", embedded.DefaultBrokerAddr, "where to listen")
	if _, err := parse(fs, args); err != nil {
		return flagExit(err)
	}
	ctx, stop := signalContext()
	defer stop()
	b, err := embedded.StartBroker(embedded.Broker{Dir: *dir, Addr: *addr})
	if err != nil {
		return fail(stderr, "broker", err)
	}
	defer b.Stop()
	fmt.Fprintf(stdout, "Broker listening on %s (data in %s). Ctrl-C stops it.\n", strings.Join(b.Addrs(), ","), *dir)
	<-ctx.Done()
	return exitOK
}

func runSeed(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("seed", `
Usage: drove seed --demo
       drove seed --ganeti REQUEST.json

Loads an inventory into the log: groups, nodes and instances. --demo loads
the demo cluster (3 groups of 8 nodes, about 200 instances); --ganeti loads
the cluster described by a Ganeti IAllocator request file, so a real
Ganeti cluster's data can be imported.`, stderr)
	var sf serviceFlags
	sf.register(fs, false)
	demo := fs.Bool("demo", false, "load the demo cluster")
	ganeti := fs.String("ganeti", "", "load the cluster of this IAllocator request file")
	if _, err := parse(fs, args); err != nil {
		return flagExit(err)
	}
	if *demo == (*ganeti != "") {
		fs.Usage()
		return exitUsage
	}
	ctx, stop := signalContext()
	defer stop()
	c := allinone.DemoCluster()
	if *ganeti != "" {
		data, err := os.ReadFile(*ganeti)
		if err != nil {
			return fail(stderr, "seed", err)
		}
		if c, err = iallocator.DecodeCluster(data); err != nil {
			return fail(stderr, "seed", err)
		}
	}
	kcfg := sf.kafka("drove-seed")
	kcfg.AwaitVisible = true // a tool: what it seeded is readable when it exits
	kcfg.TransactionalID = "drove-seed"
	if err := kafka.EnsureTopics(ctx, kcfg, sf.partitions, events.Topics()...); err != nil {
		return fail(stderr, "seed", err)
	}
	prod, err := kafka.NewProducer(kcfg)
	if err != nil {
		return fail(stderr, "seed", err)
	}
	defer prod.Close()
	envs := service.InventoryEvents(c, events.Reason{Actor: "seed", Why: "inventory loaded by drove seed"})
	if err := service.Seed(ctx, prod, envs); err != nil {
		return fail(stderr, "seed", err)
	}
	fmt.Fprintf(stdout, "Loaded %d groups, %d nodes, %d instances (%d events).\n", len(c.Groups), len(c.Nodes), len(c.Instances), len(envs))
	return exitOK
}

// movesPerNode is --max-moves-per-node: a number, or auto.
type movesPerNode struct {
	n    int
	auto bool
}

func (m *movesPerNode) String() string {
	if m.auto {
		return "auto"
	}
	return strconv.Itoa(m.n)
}

func (m *movesPerNode) Set(v string) error {
	if v == "auto" {
		m.auto = true
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("want a number of at least 1 or auto, got %q", v)
	}
	m.n, m.auto = n, false
	return nil
}
