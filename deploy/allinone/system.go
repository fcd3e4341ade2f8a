package allinone

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/drovehq/drove/deploy/supervise"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/sim"
	"github.com/drovehq/drove/gateway"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/planner/service"
	"github.com/drovehq/drove/projector"
)

// kafka is c.Kafka for one part: its client id and transactional id.
func (c Config) kafka(clientID, transactionalID string) kafka.Config {
	k := c.Kafka
	k.ClientID, k.TransactionalID = clientID, transactionalID
	k.AwaitVisible = false // the services append as in production
	return k
}

// Config describes the whole of Drove in one process: the projector,
// the planner service, one simulated executor per node and the gateway,
// over brokers and a database given from outside (the embedded ones for
// `drove dev`, the test helpers' in end-to-end tests).
type Config struct {
	// Kafka is how every part reaches the brokers (Brokers, Namespace,
	// TLS, SASL); each part sets its own ClientID and transactional id.
	Kafka       kafka.Config
	DatabaseURL string
	Schema      string // the views' schema; default "drove"
	// GatewayAddr is where the gateway listens; empty means it does not
	// listen and System.Handler serves it (tests use httptest).
	GatewayAddr string
	Logger      *slog.Logger
	// Seed gives the inventory to load when the log has none yet.
	Seed func() *planner.Cluster
	// Sim configures every node's simulated driver.
	Sim sim.Config
	// Driver, if set, makes each node's driver instead of a simulated
	// one (the ZFS demo's, see ZFSDemo.Driver).
	Driver func(ctx context.Context, node string) (executor.Driver, error)
	// MaxRunningMoves bounds running jobs cluster-wide; 0 is the
	// planner service's default.
	MaxRunningMoves int
	// AutoMovesPerNode lets the planner service choose each node's
	// concurrency from its link (--max-moves-per-node auto).
	AutoMovesPerNode bool
	// GatewayTokens turns on the API's bearer-token authentication; empty
	// leaves it off (everyone is an operator named by X-Drove-Actor).
	GatewayTokens map[string]gateway.Account
	// PKIDir is where node identities for the streams of moves are
	// issued (a CA in PKIDir/ca, each node's in PKIDir/NODE) and kept
	// across restarts; empty: a temporary directory removed at Stop.
	PKIDir string
	// Partitions is the partition count of the topics the system creates
	// (existing ones keep theirs). Default 3.
	Partitions int
	// MaxMovesPerNode bounds the moves a node sends at once; 0 is the
	// planner's default.
	MaxMovesPerNode int
	// ExecutorConcurrency bounds the opcodes each node runs at once; 0 is
	// the executor's default.
	ExecutorConcurrency int
	// PlanPartBytes bounds a part of a plan too large for one record
	// (service.Config.PlanPartBytes); 0 is the planner's default.
	PlanPartBytes int
	// PlannerSnapshotDir is where the planner service keeps its snapshot
	// (service.Config.SnapshotDir); empty: none.
	PlannerSnapshotDir string
	// RefusalAuditBurst is the gateway's budget of refusals audited one
	// by one before it folds them into counts; 0 is its default.
	RefusalAuditBurst int
	// NotaryKey signs the notary's checkpoints (projector/notary); nil: unsigned.
	// NotaryInterval is how often it writes them; 0 is its default.
	NotaryKey      ed25519.PrivateKey
	NotaryInterval time.Duration
	// NotaryHeads is the file the notary appends each signed head to, for
	// `drove verify-log --heads` (notary.Config.Heads); empty: none.
	NotaryHeads string
}

// DemoCluster is the demo: 3 groups of 8 nodes, about 200 instances of
// mixed storage kinds. With DemoSim, one node's evacuation lasts well under
// a minute while its progress is still visible.
func DemoCluster() *planner.Cluster {
	spec := clustergen.DefaultSpec()
	spec.Groups, spec.NodesPerGroup, spec.InstancesPerNode = 3, 8, 8
	spec.Fill = 0.55
	spec.NodeMemory = clustergen.Range{Min: 64 << 10, Max: 128 << 10}
	spec.Seed = 2026
	c, err := clustergen.Generate(spec)
	if err != nil {
		panic(fmt.Sprintf("demo cluster: %v", err)) // the spec is constant
	}
	return c
}

// DemoSim is the simulated data path of the demo: declared sizes scaled
// down so that one move takes a few seconds and one node's evacuation well
// under a minute, with progress still worth watching.
func DemoSim() sim.Config {
	return sim.Config{
		Bandwidth:   64 << 20, // bytes per second
		DirtyRate:   1 << 20,
		DiskScale:   1 << 10, // 1 KiB per declared MiB: 100 GiB → 100 MiB
		MemoryScale: 16 << 10,
		SwitchBelow: 8 << 20,
		StopTime:    300 * time.Millisecond,
		StartTime:   300 * time.Millisecond,
	}
}

// System is a running Drove.
type System struct {
	Nodes    []string
	Handler  http.Handler
	Registry *prometheus.Registry
	Pool     *pgxpool.Pool

	cfg      Config
	log      *slog.Logger
	kcfg     kafka.Config
	producer *kafka.Producer

	mu      sync.Mutex
	parts   map[string]*part // projector, planner, gateway, executor/<node>
	sims    map[string]*sim.Driver
	drivers map[string]executor.Driver // Config.Driver's, per node
	// tmpPKI is the temporary PKI directory when Config.PKIDir is empty.
	tmpPKI string
}

// part is one running component, restarted by supervise when it stops.
type part struct {
	cancel   context.CancelFunc
	done     chan error
	restarts int  // guarded by System.mu
	waiting  bool // stopped and waiting to restart; guarded by System.mu
	failed   bool // stopped for good; guarded by System.mu
}

// Start starts every component and, if the log has no inventory,
// seeds it.
func Start(ctx context.Context, cfg Config) (*System, error) {
	if cfg.Schema == "" {
		cfg.Schema = "drove"
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = 3
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &System{cfg: cfg, log: cfg.Logger, parts: map[string]*part{}, sims: map[string]*sim.Driver{},
		drivers: map[string]executor.Driver{},
		kcfg:    cfg.kafka("drove-dev", "")}
	s.Registry = prometheus.NewRegistry()
	s.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	if err := kafka.EnsureTopics(ctx, s.kcfg, s.cfg.Partitions, events.Topics()...); err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	pool, err := pgxpool.New(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	s.Pool = pool
	if err := projector.ApplySchema(ctx, pool, cfg.Schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	nodes, err := s.inventoryNodes(ctx)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if len(nodes) == 0 && cfg.Seed != nil {
		c := cfg.Seed()
		if err := s.seed(ctx, c); err != nil {
			pool.Close()
			return nil, fmt.Errorf("seed: %w", err)
		}
		for _, n := range c.Nodes {
			nodes = append(nodes, n.Name)
		}
	}
	s.Nodes = nodes

	gk := cfg.kafka("drove-gateway", "drove-gateway")
	gk.SoleOwner = true // the one gateway of this system
	if s.producer, err = kafka.NewProducer(gk); err != nil {
		pool.Close()
		return nil, err
	}
	g, err := gateway.New(gateway.Config{Addr: cfg.GatewayAddr, Schema: cfg.Schema, Logger: s.log.With("part", "gateway"),
		Metrics: s.Registry, Gatherer: s.Registry, KafkaCheck: s.producer.Ping, Tokens: cfg.GatewayTokens, Parts: s.Parts,
		RefusalAuditBurst: cfg.RefusalAuditBurst,
		PointInTime: PointInTime(projector.Config{Kafka: cfg.kafka("drove-asof", ""),
			Schema: cfg.Schema, Logger: s.log.With("part", "asof")}, pool)}, pool, s.producer)
	if err != nil {
		s.closeAll()
		return nil, err
	}
	s.Handler = g.Handler()

	start := []func(context.Context) error{s.StartProjector, s.StartPlanner, s.StartNotary}
	for _, n := range nodes {
		start = append(start, func(ctx context.Context) error { return s.StartExecutor(ctx, n) })
	}
	for _, f := range start {
		if err := f(ctx); err != nil {
			_ = s.Stop(context.Background())
			return nil, err
		}
	}
	if cfg.GatewayAddr != "" {
		s.run("gateway", g.Run)
	}
	return s, nil
}

// inventoryNodes lists the nodes the log knows, in order of appearance.
func (s *System) inventoryNodes(ctx context.Context) ([]string, error) {
	recs, err := kafka.ReadAll(ctx, s.kcfg, events.TopicInventory)
	if err != nil {
		return nil, fmt.Errorf("reading the inventory: %w", err)
	}
	seen := map[string]bool{}
	var nodes []string
	for _, r := range recs {
		if n, err := events.As[events.NodeAnnounced](r.Event); err == nil && !seen[n.Name] {
			seen[n.Name] = true
			nodes = append(nodes, n.Name)
		}
	}
	return nodes, nil
}

func (s *System) seed(ctx context.Context, c *planner.Cluster) error {
	p, err := kafka.NewProducer(s.cfg.kafka("drove-seed", "drove-seed"))
	if err != nil {
		return err
	}
	defer p.Close()
	return service.Seed(ctx, p, service.InventoryEvents(c, events.Reason{Actor: "drove dev", Why: "demo cluster"}))
}

// run starts a component in the background under supervise: when it
// stops with an error a restart may cure it is built and started again,
// and the restart is logged and shown by Parts (and so /healthz). f must
// build its component afresh each call.
func (s *System) run(name string, f func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &part{cancel: cancel, done: make(chan error, 1)}
	s.mu.Lock()
	s.parts[name] = p
	s.mu.Unlock()
	go func() {
		err := supervise.Run(ctx, supervise.Part{Name: name, Log: s.log,
			OnRestart: func(n int, _ error) { s.setPart(p, func() { p.restarts, p.waiting = n, true }) }},
			func(ctx context.Context) error {
				s.setPart(p, func() { p.waiting = false })
				return f(ctx)
			})
		if err != nil {
			s.log.Error("component stopped for good: no restart cures this", "part", name, "err", err)
			s.setPart(p, func() { p.failed = true })
		}
		p.done <- err
	}()
}

func (s *System) setPart(p *part, change func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change()
}

// Parts says how each component is: "running", "running (restarted N
// times; ...)", "restarting (...)" while it waits to start again, or
// "down (...)" after an error no restart cures. It names no error:
// /healthz serves it to anyone.
func (s *System) Parts() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.parts))
	for name, p := range s.parts {
		switch {
		case p.failed:
			out[name] = fmt.Sprintf("down (stopped for good after %d restarts; the log says why)", p.restarts)
		case p.waiting:
			out[name] = fmt.Sprintf("restarting (restart %d; the log says why)", p.restarts)
		case p.restarts > 0:
			out[name] = fmt.Sprintf("running (restarted %d times; the log says why)", p.restarts)
		default:
			out[name] = "running"
		}
	}
	return out
}

// StartProjector starts (or restarts) the projector.
func (s *System) StartProjector(_ context.Context) error {
	cfg := projector.Config{Kafka: s.cfg.kafka("drove-projector", ""), Partitions: s.cfg.Partitions,
		Schema: s.cfg.Schema, Logger: s.log.With("part", "projector"), Registerer: s.registerer("projector")}
	if _, err := projector.New(cfg, s.Pool); err != nil {
		return err
	}
	s.run("projector", func(ctx context.Context) error {
		p, err := projector.New(cfg, s.Pool)
		if err != nil {
			return err
		}
		return p.Run(ctx)
	})
	return nil
}

// StartPlanner starts (or restarts) the planner service.
func (s *System) StartPlanner(_ context.Context) error {
	cfg := service.Config{Kafka: s.cfg.kafka("drove-planner", ""), Partitions: s.cfg.Partitions,
		MaxRunningMoves: s.cfg.MaxRunningMoves, AutoMovesPerNode: s.cfg.AutoMovesPerNode,
		Logger: s.log.With("part", "planner"), Metrics: s.registerer("planner"),
		SnapshotDir: s.cfg.PlannerSnapshotDir, PlanPartBytes: s.cfg.PlanPartBytes}
	if s.cfg.MaxMovesPerNode > 0 {
		cfg.Options = planner.DefaultOptions()
		cfg.Options.MaxMovesPerNode = s.cfg.MaxMovesPerNode
	}
	if _, err := service.New(cfg); err != nil {
		return err
	}
	s.run("planner", func(ctx context.Context) error {
		svc, err := service.New(cfg)
		if err != nil {
			return err
		}
		return svc.Run(ctx)
	})
	return nil
}

// StartExecutor starts (or restarts) the executor of a node, with the
// node's driver (kept across restarts, as a node's disks are).
func (s *System) StartExecutor(ctx context.Context, node string) error {
	d, err := s.driver(ctx, node)
	if err != nil {
		return err
	}
	id, err := s.identity(node)
	if err != nil {
		return err
	}
	cfg := executor.Config{Node: node, Kafka: s.cfg.kafka("drove-executor-"+node, ""),
		Partitions: s.cfg.Partitions, TopicsEnsured: true, Concurrency: s.cfg.ExecutorConcurrency,
		Logger: s.log.With("part", "executor", "node", node), Metrics: s.registerer("executor/" + node), Transfer: id,
		Lease: &executor.Lease{}} // kept by the restarts below, as in one process
	e, err := executor.New(cfg, d)
	if err != nil {
		return err
	}
	s.run("executor/"+node, func(ctx context.Context) error {
		if e == nil { // a restart: the last one's producer is closed
			if e, err = executor.New(cfg, d); err != nil {
				return err
			}
		}
		defer func() { e = nil }()
		return e.Run(ctx)
	})
	return nil
}

// driver is the node's driver, made on first use: Config.Driver's, or a
// simulated one.
func (s *System) driver(ctx context.Context, node string) (executor.Driver, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.drivers[node]; d != nil {
		return d, nil
	}
	var d executor.Driver
	if s.cfg.Driver != nil {
		var err error
		if d, err = s.cfg.Driver(ctx, node); err != nil {
			return nil, fmt.Errorf("the driver of %s: %w", node, err)
		}
	} else {
		sd, err := sim.New(s.cfg.Sim)
		if err != nil {
			return nil, err
		}
		s.sims[node], d = sd, sd
	}
	s.drivers[node] = d
	return d, nil
}

// registerer gives each component, and each node's executor, its own
// label so their metrics share one registry.
func (s *System) registerer(part string) prometheus.Registerer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, running := s.parts[part]; running {
		// A restarted component registers its metrics again: give it a
		// fresh registry rather than fail on duplicates.
		return prometheus.NewRegistry()
	}
	return prometheus.WrapRegistererWith(prometheus.Labels{"component": part}, s.Registry)
}

// Sim is the simulated driver of a node, for injecting faults.
func (s *System) Sim(node string) *sim.Driver {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sims[node]
}

// StopPart stops one component ("projector", "planner", "gateway" or
// "executor/<node>") and waits for it.
func (s *System) StopPart(ctx context.Context, name string) error {
	s.mu.Lock()
	p := s.parts[name]
	s.mu.Unlock()
	if p == nil {
		return fmt.Errorf("no running part %q", name)
	}
	p.cancel()
	select {
	case err := <-p.done:
		p.done <- err // keep it for Stop
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop stops every component, then closes the pool and the producer.
func (s *System) Stop(ctx context.Context) error {
	s.mu.Lock()
	parts := s.parts
	s.mu.Unlock()
	var errs []error
	for name, p := range parts {
		p.cancel()
		select {
		case <-p.done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("%s did not stop: %w", name, ctx.Err()))
		}
	}
	s.closeAll()
	return errors.Join(errs...)
}

func (s *System) closeAll() {
	s.removePKI()
	if s.producer != nil {
		s.producer.Close()
	}
	if s.Pool != nil {
		s.Pool.Close()
	}
}
