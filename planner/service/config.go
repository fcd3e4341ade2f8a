package service

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner"
)

// TransactionalID is the planner's Kafka transactional id. It is fixed on
// purpose: there is one active planner, and a second instance started with
// the same id fences the first, whose next append then fails with
// kafka.ErrFenced and stops it.
const TransactionalID = "drove-planner"

// Config configures a Service. Zero fields take the defaults listed with them.
type Config struct {
	// Kafka is where the log is. TransactionalID defaults to
	// TransactionalID; change it only to run a separate planner on a
	// separate log.
	Kafka kafka.Config
	// Options tune plans; the zero value means planner.DefaultOptions().
	// A request's max_moves_per_node and ignore_soft_errors override
	// MaxMovesPerNode and IgnoreSoftErrors for that request.
	Options planner.Options
	// MaxRunningMoves bounds the jobs running at once across the cluster,
	// all requests together (KubeVirt's parallel migrations per cluster).
	// Default 5.
	MaxRunningMoves int
	// AutoMovesPerNode lets the job queue choose how many moves each node
	// sends at once from the links (as many as its link has room for),
	// instead of Options.MaxMovesPerNode; a request's max_moves_per_node
	// still caps its own jobs.
	AutoMovesPerNode bool
	// ReleaseInPlanOrder releases ready jobs in plan order within the
	// caps, as before release aimed at the shortest makespan, and plans
	// chain each node's moves. A pass then costs no estimates: the choice
	// for plans of tens of thousands of jobs whose links let only a few
	// run at once, where the makespan release's passes (each over the
	// whole plan, one per move ended) add up to the square of the plan.
	ReleaseInPlanOrder bool
	// Partitions is the partition count EnsureTopics gives topics that do
	// not exist yet. Default 3.
	Partitions int
	// Producer names this instance in the events it writes. Default
	// "drove-planner".
	Producer string
	// AppendRetries is how many times an append that failed in a way
	// that may succeed again is retried (same events, same ids) before Run
	// gives up with ErrAppend. Default 5.
	AppendRetries int
	// RetryBackoff is the wait before the first retry; it doubles after
	// each. Default 200ms.
	RetryBackoff time.Duration
	// Tick is how often the service wakes with no event to read, so that
	// per-instance migrations' timers (a scheduled switch, the finalize
	// grace period, the progress timeout) fire. Default 1s.
	Tick time.Duration
	// Clock is the time those timers read. Default time.Now; tests speed
	// it up.
	Clock func() time.Time
	// StallRetries is how many times a migration phase with no progress
	// for the progress timeout is dispatched again before the migration
	// fails. Default 2.
	StallRetries int
	// Standby lets several instances run: they hold an election through
	// Kafka's group membership (election.go), the leader decides and the
	// others wait, ready to take over when it dies. Off, Run decides at
	// once (one instance; a second fences the first).
	Standby bool
	// ElectionTimeout is how long a leader may be silent before a standby
	// takes over: the election's group session timeout. Default 6s (the
	// least Kafka allows by default).
	ElectionTimeout time.Duration
	// PlanPartBytes bounds one part of a plan too large for one record
	// (events.SplitPlan). Default a quarter of Kafka.MaxRecordBytes,
	// leaving room for the envelope and the reasons it carries.
	PlanPartBytes int
	// SnapshotDir is where the service keeps a snapshot of its state
	// (snapshot.go), so that a start reads only the log after it; empty
	// means none: every start replays the whole log.
	SnapshotDir string
	// SnapshotEvery is how many events the service folds between two
	// snapshots. Default 50,000: a start after a crash reads at most
	// that many (a second or two of folding), while a snapshot of 100,000
	// instances costs about a tenth of a second of the loop.
	SnapshotEvery int
	// SnapshotInterval is how long the service goes without a snapshot
	// while it folds fewer events than SnapshotEvery. Default 1m. Either
	// way it takes one as it stops.
	SnapshotInterval time.Duration
	// NodeLease is how long a node's executor may go without a heartbeat
	// read before the node is declared lost (offline) and its moves end
	// (planner/nodes). Default 30s; negative declares no node lost.
	NodeLease time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics registers the service's collectors; nil means a private
	// registry (the metrics are then kept but not exported).
	Metrics prometheus.Registerer
}

func (c Config) withDefaults() Config {
	if c.Kafka.TransactionalID == "" {
		c.Kafka.TransactionalID = TransactionalID
	}
	if c.Options == (planner.Options{}) {
		c.Options = planner.DefaultOptions()
	}
	if c.MaxRunningMoves == 0 {
		c.MaxRunningMoves = 5
	}
	if c.Partitions == 0 {
		c.Partitions = 3
	}
	if c.Producer == "" {
		c.Producer = "drove-planner"
	}
	if c.AppendRetries == 0 {
		c.AppendRetries = 5
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = 200 * time.Millisecond
	}
	if c.Tick == 0 {
		c.Tick = time.Second
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.StallRetries == 0 {
		c.StallRetries = 2
	}
	if c.PlanPartBytes == 0 {
		c.PlanPartBytes = cmp.Or(c.Kafka.MaxRecordBytes, 8<<20) / 4
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = 50_000
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = time.Minute
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = 6 * time.Second
	}
	if c.NodeLease == 0 {
		c.NodeLease = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = prometheus.NewRegistry()
	}
	return c
}

// Validate reports every problem in c at once, after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if err := c.Kafka.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Options.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Options: %w", err))
	}
	var ps []string
	for _, chk := range []struct {
		bad bool
		msg string
	}{
		{c.MaxRunningMoves < 1, fmt.Sprintf("MaxRunningMoves: %d (want at least 1)", c.MaxRunningMoves)},
		{c.Partitions < 1, fmt.Sprintf("Partitions: %d (want at least 1)", c.Partitions)},
		{c.AppendRetries < 0, fmt.Sprintf("AppendRetries: negative (%d)", c.AppendRetries)},
		{c.RetryBackoff < 0, fmt.Sprintf("RetryBackoff: negative (%s)", c.RetryBackoff)},
		{c.Tick < 0, fmt.Sprintf("Tick: negative (%s)", c.Tick)},
		{c.StallRetries < 0, fmt.Sprintf("StallRetries: negative (%d)", c.StallRetries)},
		{c.ElectionTimeout < 0, fmt.Sprintf("ElectionTimeout: negative (%s)", c.ElectionTimeout)},
		{c.PlanPartBytes < 1, fmt.Sprintf("PlanPartBytes: %d (want at least 1)", c.PlanPartBytes)},
		{c.SnapshotEvery < 1, fmt.Sprintf("SnapshotEvery: %d (want at least 1)", c.SnapshotEvery)},
		{c.SnapshotInterval < 0, fmt.Sprintf("SnapshotInterval: negative (%s)", c.SnapshotInterval)},
	} {
		if chk.bad {
			ps = append(ps, chk.msg)
		}
	}
	if len(ps) > 0 {
		errs = append(errs, errors.New(strings.Join(ps, "; ")))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}
