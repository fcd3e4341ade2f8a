package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/drovehq/drove/events/retry"
)

// Config is what every Producer, Reader and client of this package needs.
// Zero fields take the defaults listed with them.
type Config struct {
	// Brokers are the seed brokers, host:port. Required.
	Brokers []string
	// ClientID names the client in broker logs and quotas. Default "drove".
	ClientID string
	// Namespace is put in front of every topic, consumer group and
	// transactional ID this Config names on the broker, so that several
	// Drove installations (or tests) share one Kafka cluster and never see
	// each other's events. Callers, and every position Drove stores, use
	// the names without it: a log copied from one namespace to another
	// replays the same. Default none: the names as Drove gives them.
	Namespace string
	// TransactionalID identifies a producer across restarts, so that a new
	// instance fences the old one's unfinished transactions. It must be
	// stable per producer role and instance (e.g. "planner-0") and never
	// shared by two live producers. Required by NewProducer only.
	TransactionalID string
	// SoleOwner says TransactionalID is this process's alone (a gateway's
	// carries its host and pid). A fence can then only come from a client
	// this producer abandoned (replaceClient) whose request reached the
	// broker late, after the next client's: the producer starts a new
	// client and tries the append once more instead of failing with
	// ErrFenced for good.
	SoleOwner bool
	// TransactionTimeout is how long the broker lets an open transaction
	// live before aborting it, e.g. after a producer crash. Default 30s.
	TransactionTimeout time.Duration
	// DialTimeout bounds connecting to a broker. Default 10s.
	DialTimeout time.Duration
	// FetchMaxWait is how long a broker holds a fetch waiting for data.
	// Default 1s; lower means faster shutdown and faster tails.
	FetchMaxWait time.Duration
	// MaxPollRecords bounds the records of one Reader batch (ReadOptions.
	// MaxRecords overrides it). Default 500.
	MaxPollRecords int
	// CommitTimeout bounds committing offsets and ending transactions. They
	// run on a context detached from the caller's, because abandoning them
	// halfway would leave the outcome unknown. Default 10s.
	CommitTimeout time.Duration
	// ReplicationFactor is used by EnsureTopics; -1 is the broker default.
	// Default -1.
	ReplicationFactor int16
	// MinInsyncReplicas is the min.insync.replicas EnsureTopics creates
	// topics with: how many replicas must hold an event before its append
	// is acknowledged (producers append with acks=all). Default 2 when
	// ReplicationFactor is 3 or more, so an acknowledged event outlives
	// the loss of a broker; else 1.
	MinInsyncReplicas int
	// MaxRecordBytes bounds one event in the log: topics are created with
	// it as max.message.bytes, every client of the Config reads and writes
	// records up to it, and Append refuses a larger event before writing
	// anything. Default 8 MiB, enough for
	// the plan of a request of tens of thousands of instances.
	MaxRecordBytes int
	// AwaitVisible makes an append return only once read-committed
	// readers can see it (Producer.awaitVisible): for callers that append
	// and then read what they appended, as tools and tests do. Apache
	// Kafka answers a commit before the transaction's markers are in the
	// partitions, so without it a Reader opened at once may stop short of
	// the append. Services that read their own appends by following the
	// log need not wait, and a wait costs an offset listing per append.
	AwaitVisible bool
	// AllowFiniteRetention lets EnsureTopics accept existing topics whose
	// configuration deletes events (finite retention, compaction) with a
	// warning, instead of refusing to start: an operator's explicit
	// choice (--allow-finite-retention, DROVE_ALLOW_FINITE_RETENTION), for
	// clusters where disk wins over history. Replays then miss what the
	// broker deleted.
	AllowFiniteRetention bool
	// TLS connects to brokers over TLS (security.go); zero: plain TCP.
	TLS TLS
	// SASL authenticates to brokers (security.go); zero: none.
	SASL SASL
	// Logger hears what a reader rides out and what EnsureTopics allows
	// with a warning. Default slog.Default().
	Logger *slog.Logger
	// Dial, when set, opens the connections to brokers instead of
	// net.Dialer; tests cut a client off the network with it, as a crash
	// or a partition would (no goodbye reaches the broker).
	Dial func(ctx context.Context, network, host string) (net.Conn, error)
	// Retry paces those retries. Default: from 100ms doubling to 5s, until
	// the step succeeds, fails for good or the context ends.
	Retry retry.Backoff
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.ClientID == "" {
		c.ClientID = "drove"
	}
	if c.TransactionTimeout == 0 {
		c.TransactionTimeout = 30 * time.Second
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 10 * time.Second
	}
	if c.FetchMaxWait == 0 {
		c.FetchMaxWait = time.Second
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = 500
	}
	if c.CommitTimeout == 0 {
		c.CommitTimeout = 10 * time.Second
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = 8 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Retry == (retry.Backoff{}) {
		c.Retry = retry.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second}
	}
	return c
}

// Validate reports every problem in c at once, after defaults are applied.
func (c Config) Validate() error { return c.validate(false) }

func (c Config) validate(producer bool) error {
	c = c.withDefaults()
	var ps []string
	if len(c.Brokers) == 0 {
		ps = append(ps, "Brokers: missing")
	}
	for i, b := range c.Brokers {
		if strings.TrimSpace(b) == "" {
			ps = append(ps, fmt.Sprintf("Brokers[%d]: empty", i))
		}
	}
	if producer && c.TransactionalID == "" {
		ps = append(ps, "TransactionalID: missing (a producer appends in transactions)")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"TransactionTimeout", c.TransactionTimeout},
		{"DialTimeout", c.DialTimeout},
		{"FetchMaxWait", c.FetchMaxWait},
		{"CommitTimeout", c.CommitTimeout},
	} {
		if d.v < 0 {
			ps = append(ps, fmt.Sprintf("%s: negative (%s)", d.name, d.v))
		}
	}
	if c.FetchMaxWait >= 0 && c.FetchMaxWait < time.Millisecond {
		ps = append(ps, fmt.Sprintf("FetchMaxWait: %s is below Kafka's 1ms resolution", c.FetchMaxWait))
	}
	if c.MaxPollRecords < 0 {
		ps = append(ps, fmt.Sprintf("MaxPollRecords: negative (%d)", c.MaxPollRecords))
	}
	if c.MaxRecordBytes < 1024 {
		ps = append(ps, fmt.Sprintf("MaxRecordBytes: %d (want at least 1024)", c.MaxRecordBytes))
	}
	if c.MinInsyncReplicas < 0 || c.ReplicationFactor > 0 && c.MinInsyncReplicas > int(c.ReplicationFactor) {
		ps = append(ps, fmt.Sprintf("MinInsyncReplicas: %d (want 1 to ReplicationFactor, %d)", c.MinInsyncReplicas, c.ReplicationFactor))
	}
	if c.ReplicationFactor < -1 {
		ps = append(ps, fmt.Sprintf("ReplicationFactor: %d (want -1 or at least 1)", c.ReplicationFactor))
	}
	ps = append(ps, c.securityProblems()...)
	if len(ps) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(ps, "; "))
	}
	return nil
}

// clientOpts are the options every client of this package shares.
func (c Config) clientOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.ClientID(c.ClientID),
		kgo.DialTimeout(c.DialTimeout),
		kgo.FetchMaxWait(c.FetchMaxWait),
		// A client reads and writes records up to the bound its topics
		// are created with (franz-go's default is 1 MB each way), so a
		// copy of a log takes every record the log holds.
		kgo.FetchMaxPartitionBytes(int32(c.MaxRecordBytes)),
		kgo.ProducerBatchMaxBytes(int32(c.MaxRecordBytes)),
		// franz-go answers a metadata request from its cache for 5 s by
		// default, and refreshes no sooner after an error: a topic just
		// created stayed unknown 5 s to EnsureTopics on Apache Kafka, and
		// a partition whose leader died stays unwritable as long. A
		// quarter second keeps the queries few and the failover quick.
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
	// How to reach and authenticate to the brokers — Dial, TLS and SASL
	// (security.go): every client of a Config is secured alike.
	return append(opts, c.securityOpts()...)
}
