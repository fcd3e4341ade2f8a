package executor

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/events/retry"
	"github.com/drovehq/drove/executor/transfer"
)

// Config is what an Executor needs. Zero fields take the defaults listed
// with them; Validate reports every problem at once.
type Config struct {
	// Node is the node this executor runs on and acts for. Required.
	Node string
	// Kafka is the cluster the log lives on. TransactionalID defaults to
	// "drove-executor-<node>": one live executor per node, and a restarted
	// one fences its predecessor.
	Kafka kafka.Config
	// Partitions is the partition count EnsureTopics gives topics it
	// creates. Default 3.
	Partitions int
	// TopicsEnsured says whoever runs this executor has already ensured
	// the topics and checked their settings (deploy/allinone does, once,
	// before it starts any executor), so Run does not again: a check
	// describes every topic's configuration, and 24 executors starting at
	// once made it a tenth of the broker's work. A stand-alone executor
	// leaves it false.
	TopicsEnsured bool
	// Concurrency bounds the opcodes this node runs at once. Default 4.
	Concurrency int
	// Retry says how transient faults are retried.
	Retry Retry
	// ProgressInterval is the least time between two progress events of
	// one opcode; reports in between are folded into the next event.
	// Default 500ms.
	ProgressInterval time.Duration
	// CheckpointLinger is how long the executor's checkpoint stays before
	// the dispatch of an opcode (or phase, or receiver) that has ended, so
	// that a restart still recognises a copy of the dispatch the planner
	// appended again after the end (read.go). Longer than the planner's
	// append retries. Default 1m.
	CheckpointLinger time.Duration
	// Logger gets the executor's logs. Default slog.Default().
	Logger *slog.Logger
	// Metrics registers drove_executor_* metrics; nil means a private
	// registry.
	Metrics prometheus.Registerer
	// ListenAddr is where receivers (the target side of moves, for drivers
	// that implement Receiver) listen, "host:port"; port 0 picks one per
	// move. Default "127.0.0.1:0".
	ListenAddr string
	// AdvertiseAddr, if set, is the host (or host:port) the source should
	// dial instead of the listener's own address, for receivers behind
	// NAT or listening on 0.0.0.0. A port of 0 or none keeps the
	// listener's port.
	AdvertiseAddr string
	// Transfer is this node's identity (a *nodeid.Identity) for the
	// streams that carry moves: with it they are TLS 1.3 both ways, each
	// end checking that the other is the node the move names. Required
	// when the driver sends instances between nodes, unless PlainTransfer.
	Transfer transfer.Identity
	// PlainTransfer allows those streams in plain TCP when Transfer is
	// nil: for tests and trusted single-host setups only; the executor
	// warns in its log at start.
	PlainTransfer bool
	// Announce, if set, is appended to drove.inventory at start: executors
	// announce their node. Its Name must be Node.
	Announce *events.NodeAnnounced
	// Heartbeat is how often the executor renews its node's lease with a
	// NodeHeartbeat on drove.heartbeats (lease.go). Default 5s; negative
	// sends none and fences nothing.
	Heartbeat time.Duration
	// Fence is how long after its last heartbeat that the log took the
	// executor still acts on moves: past it, cut off from the broker, it
	// cancels the moves it runs (drivers roll back short of the point of
	// no return) and refuses to switch a migration. Default 3 × Heartbeat;
	// keep it well below the planner service's NodeLease.
	Fence time.Duration
	// Lease carries the fence across the Executors one process starts for
	// the node, one after another (see Lease). Nil: a lease of its own.
	Lease *Lease
}

// Retry is the backoff for transient faults: Initial before the second
// attempt, doubling up to Max.
type Retry struct {
	// Attempts is the number of tries in all, the first included.
	// Default 5.
	Attempts int
	// Initial is the wait before the second attempt. Default 200ms.
	Initial time.Duration
	// Max caps the wait. Default 5s.
	Max time.Duration
}

func (c Config) withDefaults() Config {
	if c.Partitions == 0 {
		c.Partitions = 3
	}
	if c.Lease == nil {
		c.Lease = &Lease{}
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.Retry.Attempts == 0 {
		c.Retry.Attempts = 5
	}
	if c.Retry.Initial == 0 {
		c.Retry.Initial = 200 * time.Millisecond
	}
	if c.Retry.Max == 0 {
		c.Retry.Max = 5 * time.Second
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = 500 * time.Millisecond
	}
	if c.CheckpointLinger == 0 {
		c.CheckpointLinger = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ListenAddr == "" {
		c.ListenAddr = "127.0.0.1:0"
	}
	if c.Metrics == nil {
		c.Metrics = prometheus.NewRegistry()
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = 5 * time.Second
	}
	if c.Fence == 0 && c.Heartbeat > 0 {
		c.Fence = 3 * c.Heartbeat
	}
	if c.Kafka.TransactionalID == "" && c.Node != "" {
		c.Kafka.TransactionalID = events.ExecutorGroup(c.Node)
	}
	return c
}

// Validate reports every problem in c at once, after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	var ps []string
	if strings.TrimSpace(c.Node) == "" {
		ps = append(ps, "Node: missing")
	}
	if err := c.Kafka.Validate(); err != nil {
		ps = append(ps, "Kafka: "+err.Error())
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"Partitions", c.Partitions}, {"Concurrency", c.Concurrency}, {"Retry.Attempts", c.Retry.Attempts}} {
		if n.v < 1 {
			ps = append(ps, fmt.Sprintf("%s: %d (want at least 1)", n.name, n.v))
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"Retry.Initial", c.Retry.Initial}, {"Retry.Max", c.Retry.Max},
		{"ProgressInterval", c.ProgressInterval},
		{"CheckpointLinger", c.CheckpointLinger},
	} {
		if d.v < 0 {
			ps = append(ps, fmt.Sprintf("%s: negative (%s)", d.name, d.v))
		}
	}
	if c.Retry.Max < c.Retry.Initial {
		ps = append(ps, fmt.Sprintf("Retry.Max: %s is below Retry.Initial %s", c.Retry.Max, c.Retry.Initial))
	}
	if a := c.Announce; a != nil && a.Name != c.Node {
		ps = append(ps, fmt.Sprintf("Announce.Name: %q, want the executor's node %q", a.Name, c.Node))
	}
	if len(ps) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(ps, "; "))
	}
	return nil
}

// policy is r as the shared backoff: every retry of the executor (driver
// steps, appends, the target side's listening) goes through it.
func (r Retry) policy() retry.Backoff {
	return retry.Backoff{Tries: r.Attempts, Initial: r.Initial, Max: r.Max}
}
