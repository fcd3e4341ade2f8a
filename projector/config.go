package projector

import (
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events/kafka"
)

// Config is what a Projector and Replay need. Zero fields take the defaults
// listed with them.
type Config struct {
	// Kafka locates the brokers; only Brokers, ClientID, DialTimeout and
	// FetchMaxWait are used (no group, no transactions). Required.
	Kafka kafka.Config
	// Schema is the Postgres schema holding the views. Default "drove".
	// Replay folds into <Schema>_replay_<unix-nanos> beside it.
	Schema string
	// Partitions is the partition count EnsureTopics gives topics it has
	// to create. Default 3.
	Partitions int
	// BatchSize bounds the records folded in one Postgres transaction.
	// Default 4000: a larger batch has more statements to coalesce and
	// merge, and fewer commits (on the projector bench 4000 folded about
	// 8 % faster than 2000; 8000 no faster than 4000).
	BatchSize int
	// BatchBytes bounds the record bytes (keys, values, headers) folded
	// in one transaction: a batch of BatchSize records is cut into pieces
	// of at most this many bytes (a larger record is a piece of its own),
	// which bounds the projector's memory whatever the records weigh
	// (pieces.go). Default 8 MiB.
	BatchBytes int
	// BulkCatchUp is the fewest records a live projector must have to
	// fold, on a schema that has folded nothing, to fold them as Replay
	// does: without the indexes the fold does not read, built once it
	// first catches up (bulk.go). Default 10,000; negative never.
	BulkCatchUp int
	// LagInterval is how often end offsets are listed, for the lag metric
	// and to find partitions added to a topic. Default 10s.
	LagInterval time.Duration
	// ReplayWait bounds how long Replay waits for the live projector to
	// reach the log's end before comparing. Default 30s; negative means do
	// not wait (the report then says whether the live views were behind).
	ReplayWait time.Duration
	// KeepReplay keeps the replay schema after Replay, for inspection,
	// with every index of a live schema. By default it is dropped, and
	// its secondary indexes, which its checksums do not read, are never
	// built.
	KeepReplay bool
	// Logger receives the projector's logs. Default slog.Default().
	Logger *slog.Logger
	// Registerer receives the projector's metrics; nil means a private
	// registry (metrics are kept but not exported).
	Registerer prometheus.Registerer
}

// DefaultBatchSize and DefaultBatchBytes are Config.BatchSize's and
// Config.BatchBytes's defaults.
const (
	DefaultBatchSize  = 4000
	DefaultBatchBytes = 8 << 20
	// DefaultBulkCatchUp is Config.BulkCatchUp's default.
	DefaultBulkCatchUp = 10_000
)

// schemaName is what Drove accepts as a schema name: a plain lower-case
// identifier, short enough that its replay schema's name still fits in
// Postgres's 63 bytes.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,29}$`)

// identifier is any schema name Migrate accepts: a plain lower-case
// identifier Postgres does not truncate, so it never needs quoting rules
// beyond double quotes.
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (c Config) withDefaults() Config {
	if c.Schema == "" {
		c.Schema = "drove"
	}
	if c.Partitions == 0 {
		c.Partitions = 3
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.BatchBytes == 0 {
		c.BatchBytes = DefaultBatchBytes
	}
	if c.BulkCatchUp == 0 {
		c.BulkCatchUp = DefaultBulkCatchUp
	}
	if c.LagInterval == 0 {
		c.LagInterval = 10 * time.Second
	}
	if c.ReplayWait == 0 {
		c.ReplayWait = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Kafka.ClientID == "" {
		c.Kafka.ClientID = "drove-projector"
	}
	if c.Kafka.DialTimeout == 0 {
		c.Kafka.DialTimeout = 10 * time.Second
	}
	if c.Kafka.FetchMaxWait == 0 {
		c.Kafka.FetchMaxWait = time.Second
	}
	return c
}

// Validate reports every problem in c at once, after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	var ps []string
	if err := c.Kafka.Validate(); err != nil {
		ps = append(ps, err.Error())
	}
	if err := checkSchema(c.Schema); err != nil {
		ps = append(ps, "Schema: "+err.Error())
	}
	if c.Partitions < 1 {
		ps = append(ps, fmt.Sprintf("Partitions: %d (want at least 1)", c.Partitions))
	}
	if c.BatchSize < 1 {
		ps = append(ps, fmt.Sprintf("BatchSize: %d (want at least 1)", c.BatchSize))
	}
	if c.BatchBytes < 1 {
		ps = append(ps, fmt.Sprintf("BatchBytes: %d (want at least 1)", c.BatchBytes))
	}
	if c.LagInterval < 0 {
		ps = append(ps, fmt.Sprintf("LagInterval: negative (%s)", c.LagInterval))
	}
	if len(ps) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(ps, "; "))
	}
	return nil
}

// checkSchema refuses names that would need quoting or would not leave room
// for a replay suffix.
func checkSchema(s string) error {
	if !schemaName.MatchString(s) {
		return fmt.Errorf("%q is not a lower-case identifier of at most 30 characters", s)
	}
	if strings.HasPrefix(s, "pg_") {
		return fmt.Errorf("%q: the pg_ prefix is reserved by Postgres", s)
	}
	return nil
}
