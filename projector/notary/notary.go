package notary

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/chain"
	"github.com/drovehq/drove/events/kafka"
)

// Config is the notary's. Zero fields take the defaults listed.
type Config struct {
	// Kafka locates the brokers; TransactionalID defaults to
	// "drove-notary". Required: Brokers.
	Kafka kafka.Config
	// Key signs the checkpoints; nil writes them unsigned (the chain
	// still links them, but anyone who can write the topic can forge one).
	Key ed25519.PrivateKey
	// Interval is how often each partition that moved gets a checkpoint.
	// Default 10s.
	Interval time.Duration
	// MaxRecords bounds the records one checkpoint covers (its marks grow
	// 8 bytes a record). Default 1000.
	MaxRecords int64
	// Heads, when set, is a file each checkpoint's signed head is
	// appended to once the checkpoint is in the log (see heads.go), for
	// `drove verify-log --heads`: without it a log cut at its end is not
	// seen. Ship it off the brokers' hosts as it is written.
	Heads string
	// Partitions is the partition count EnsureTopics gives topics it
	// creates. Default 3.
	Partitions int
	// Logger default slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Kafka.TransactionalID == "" {
		c.Kafka.TransactionalID = "drove-notary"
	}
	if c.Kafka.ClientID == "" {
		c.Kafka.ClientID = "drove-notary"
	}
	if c.Interval == 0 {
		c.Interval = 10 * time.Second
	}
	if c.MaxRecords == 0 {
		c.MaxRecords = 1000
	}
	if c.Partitions == 0 {
		c.Partitions = 3
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports every problem in c at once.
func (c Config) Validate() error {
	c = c.withDefaults()
	var ps []string
	if err := c.Kafka.Validate(); err != nil {
		ps = append(ps, err.Error())
	}
	if c.Interval < 0 {
		ps = append(ps, "Interval: negative")
	}
	if c.MaxRecords < 1 {
		ps = append(ps, "MaxRecords: want at least 1")
	}
	if len(ps) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(ps, "; "))
	}
	return nil
}

// Run chains every partition from where its last checkpoint left off and
// appends checkpoints until ctx is done (then it returns nil) or Kafka
// fails beyond franz-go's retries. A failed append stops it: the next Run
// resumes after the last checkpoint the log holds, so no checkpoint is
// skipped.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	if err := kafka.EnsureTopics(ctx, cfg.Kafka, cfg.Partitions, events.Topics()...); err != nil {
		return err
	}
	r, chains, err := resume(ctx, cfg)
	if err != nil {
		return err
	}
	defer r.Close()
	prod, err := kafka.NewProducer(cfg.Kafka)
	if err != nil {
		return err
	}
	defer prod.Close()
	n := &run{cfg: cfg, chains: chains, prod: prod, last: time.Now()}
	if cfg.Heads != "" {
		if n.heads, err = openHeads(cfg.Heads); err != nil {
			return err
		}
		defer n.heads.Close()
	}
	cfg.Logger.Info("notary: chaining", "partitions", len(chains), "signed", cfg.Key != nil, "heads", cfg.Heads)
	for {
		batch, err := r.Next(ctx)
		if ctx.Err() != nil {
			return nil // what is not checkpointed yet is read again next time
		}
		if err != nil {
			return fmt.Errorf("notary: read: %w", err)
		}
		for _, rec := range batch.Records {
			if b := n.chains[Partition{Topic: rec.Topic, Partition: rec.Partition}]; b != nil {
				b.Add(recordOf(rec))
				if b.Pending() >= cfg.MaxRecords {
					n.cutOne(b)
				}
			}
		}
		if err := n.checkpoint(ctx); err != nil {
			return err
		}
	}
}

// run is one Run's state.
type run struct {
	cfg    Config
	chains map[Partition]*chain.Builder
	prod   *kafka.Producer
	last   time.Time
	queue  []events.Envelope // checkpoints cut, not yet appended
	heads  *heads            // nil without Config.Heads
}

// cutOne cuts b's checkpoint into the queue.
func (n *run) cutOne(b *chain.Builder) {
	if c, ok := b.Cut(); ok {
		if n.cfg.Key != nil {
			sign(&c, n.cfg.Key)
		}
		n.queue = append(n.queue, events.New(c, events.WithProducer("notary"),
			events.WithReason(events.Reason{Actor: "notary", Why: "checkpoint of the log's hash chain"})))
	}
}

// checkpoint appends the checkpoints cut for partitions that reached
// MaxRecords and, once Interval has passed since the last round, one of
// every partition with records not yet certified.
func (n *run) checkpoint(ctx context.Context) error {
	if time.Since(n.last) >= n.cfg.Interval {
		n.last = time.Now()
		for _, b := range n.chains {
			n.cutOne(b)
		}
	}
	if len(n.queue) == 0 {
		return nil
	}
	if err := n.prod.Append(ctx, events.TopicCheckpoints, n.queue...); err != nil {
		return fmt.Errorf("notary: append %d checkpoints: %w", len(n.queue), err)
	}
	// After the log, never before: a head must name a checkpoint the log
	// holds, or an honest log would read as cut. A head lost here (the
	// file fails, the notary stops) only delays the proof to the next.
	if n.heads != nil {
		if err := n.heads.add(n.queue); err != nil {
			return err
		}
	}
	n.queue = nil
	return nil
}

// resume reads the checkpoints so far and starts each partition's chain
// after its last one (or at its genesis), with a Reader following every
// chained partition from there; an empty batch every Interval lets the
// loop checkpoint on time.
func resume(ctx context.Context, cfg Config) (*kafka.Reader, map[Partition]*chain.Builder, error) {
	cps, err := ReadCheckpoints(ctx, cfg.Kafka)
	if err != nil {
		return nil, nil, err
	}
	from := kafka.Positions{}
	for p, cs := range cps {
		if len(cs) > 0 {
			from[p] = cs[len(cs)-1].NextOffset
		}
	}
	r, err := kafka.NewReader(ctx, cfg.Kafka, kafka.ReadOptions{Topics: ChainedTopics(),
		From: from, Follow: true, MaxWait: cfg.Interval})
	if err != nil {
		return nil, nil, err
	}
	chains := map[Partition]*chain.Builder{}
	for topic, ps := range r.Partitions() {
		for _, p := range ps {
			tp := Partition{Topic: topic, Partition: p}
			b := chain.NewBuilder(topic, p)
			if cs := cps[tp]; len(cs) > 0 {
				if b, err = chain.Resume(cs[len(cs)-1].CheckpointRecorded); err != nil {
					r.Close()
					return nil, nil, err
				}
			}
			chains[tp] = b
		}
	}
	return r, chains, nil
}
