package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// Projector folds every topic of the log into the views of one schema.
type Projector struct {
	cfg  Config
	pool *pgxpool.Pool
	log  *slog.Logger
	m    *metrics
	f    *folder

	mu   sync.Mutex
	next map[tp]int64 // the committed next offset of each partition
	end  map[tp]int64 // the last known end (last stable offset)

	// afterCommit, when set, is called after each committed batch with
	// the data records folded so far by this Run; a test seam.
	afterCommit func(folded int)
}

// New checks cfg and returns a Projector for cfg.Schema. It touches neither
// Kafka nor Postgres; Run does.
func New(cfg Config, pool *pgxpool.Pool) (*Projector, error) {
	err := cfg.Validate()
	if pool == nil {
		err = errors.Join(err, fmt.Errorf("%w: pool missing", ErrInvalidConfig))
	}
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", ErrInvalidConfig, err)
	}
	log := cfg.Logger.With("component", "projector", "schema", cfg.Schema)
	return &Projector{
		cfg:  cfg,
		pool: pool,
		log:  log,
		m:    m,
		f:    &folder{schema: cfg.Schema, log: log, m: m},
		next: map[tp]int64{},
		end:  map[tp]int64{},
	}, nil
}

// Run folds the log into the views until ctx is done (it then returns nil)
// or something fails: Postgres, or Kafka beyond what franz-go retries. The
// caller restarts it; nothing is lost, because where the views are in the
// log is read back from projector_offsets at every start.
//
// Only one Run folds into a schema at a time: it holds a Postgres advisory
// lock on the connection it writes through, and a second Run waits for it.
// If that connection dies, the lock goes with it, and so do its writes.
func (p *Projector) Run(ctx context.Context) error {
	if err := kafka.EnsureTopics(ctx, p.cfg.Kafka, p.cfg.Partitions, events.Topics()...); err != nil {
		return err
	}
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("projector: acquire connection: %w", err)
	}
	defer conn.Release()
	if err := p.lock(ctx, conn); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = conn.Exec(uctx, `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, lockKey(p.cfg.Schema))
	}()
	if err := checkSchemaVersion(ctx, conn, p.cfg.Schema); err != nil {
		return err
	}
	stored, err := loadOffsets(ctx, conn, p.cfg.Schema)
	if err != nil {
		return err
	}
	from, err := p.resumeFrom(ctx, stored)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(clientOpts(p.cfg.Kafka), kgo.ConsumePartitions(from))...)
	if err != nil {
		return fmt.Errorf("%w: kafka: %w", ErrInvalidConfig, err)
	}
	defer cl.Close()
	p.log.Info("projector: folding", "partitions", len(from), "resumed", len(stored))

	var wg sync.WaitGroup
	wctx, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }()
	wg.Go(func() { p.watchEnds(wctx, cl) })
	return p.foldAll(ctx, conn, cl)
}

// resumeFrom says where each partition's reading starts: at the offset
// the views recorded, or at the start of a partition they never read.
func (p *Projector) resumeFrom(ctx context.Context, stored map[tp]int64) (map[string]map[int32]kgo.Offset, error) {
	ends, err := listEndsOnce(ctx, p.cfg.Kafka)
	if err != nil {
		return nil, err
	}
	from := map[string]map[int32]kgo.Offset{}
	p.mu.Lock()
	for k, end := range ends {
		p.end[k] = end
		if n, ok := stored[k]; ok {
			p.next[k] = n
			add(from, k, kgo.NewOffset().At(n))
		} else {
			p.next[k] = 0
			add(from, k, kgo.NewOffset().AtStart())
		}
	}
	p.mu.Unlock()
	p.updateLag()
	return from, nil
}

// foldAll folds every poll of cl through conn, one transaction a batch,
// until ctx is done or something fails.
func (p *Projector) foldAll(ctx context.Context, conn *pgxpool.Conn, cl *kgo.Client) error {
	// The next poll is fetched and decoded while this one is folded.
	batches, stopReading := readAhead(ctx, func(ctx context.Context) (kgo.Fetches, []*kgo.Record, bool) {
		fs := cl.PollRecords(ctx, p.cfg.BatchSize)
		return fs, fs.Records(), !fs.IsClientClosed()
	})
	defer stopReading()
	folded := 0
	for {
		b, ok := <-batches
		if ctx.Err() != nil {
			return nil // nothing of this poll was folded; the offsets say so
		}
		fs, recs := b.fs, b.recs
		if !ok || fs.IsClientClosed() {
			return kafka.ErrClosed
		}
		if err := p.fetchErrors(fs); err != nil {
			return err
		}
		if len(recs) == 0 {
			continue
		}
		res, err := p.f.foldDecoded(ctx, conn, recs, b.items)
		if err != nil {
			if ctx.Err() != nil {
				return nil // rolled back, or committed and recorded: either way the offsets are right
			}
			return fmt.Errorf("projector: fold %d records: %w", len(recs), err)
		}
		p.advance(fs, res)
		folded += res.records
		if p.afterCommit != nil {
			p.afterCommit(folded)
		}
	}
}

// advance records a committed batch's next offsets and the ends the poll
// saw, for the lag gauge.
func (p *Projector) advance(fs kgo.Fetches, res foldResult) {
	p.mu.Lock()
	for k, n := range res.next {
		p.next[k] = n
	}
	fs.EachPartition(func(fp kgo.FetchTopicPartition) {
		k := tp{fp.Topic, fp.Partition}
		p.end[k] = max(p.end[k], fp.LastStableOffset)
	})
	p.mu.Unlock()
	p.updateLag()
}

// lock takes the schema's projector lock on conn, waiting (and saying so)
// while another projector holds it.
func (p *Projector) lock(ctx context.Context, conn *pgxpool.Conn) error {
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`,
		lockKey(p.cfg.Schema)).Scan(&got); err != nil {
		return fmt.Errorf("projector: lock: %w", err)
	}
	if got {
		return nil
	}
	p.log.Warn("projector: another projector folds into this schema; waiting for its lock")
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, lockKey(p.cfg.Schema)); err != nil {
		return fmt.Errorf("projector: lock: %w", err)
	}
	return nil
}

func lockKey(schema string) string { return "drove.projector." + schema }

// fetchErrors returns the poll's fetch errors that need an operator. Data
// loss (the log was truncated under us) is logged loudly: franz-go has
// already moved on to what remains, and the views will miss the lost part.
func (p *Projector) fetchErrors(fs kgo.Fetches) error {
	var errs []error
	fs.EachError(func(topic string, partition int32, err error) {
		var loss *kgo.ErrDataLoss
		switch {
		case errors.As(err, &loss):
			p.log.Error("projector: data loss in the log; the views miss the lost records",
				"topic", topic, "partition", partition, "err", err)
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		default:
			errs = append(errs, fmt.Errorf("projector: fetch %s/%d: %w", topic, partition, err))
		}
	})
	return errors.Join(errs...)
}

// watchEnds refreshes the end offsets every LagInterval, for the lag
// metric, and starts consuming partitions added to a topic since Run began.
func (p *Projector) watchEnds(ctx context.Context, cl *kgo.Client) {
	t := time.NewTicker(p.cfg.LagInterval)
	defer t.Stop()
	adm := kadm.NewClient(cl)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ends, err := listEnds(ctx, adm)
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("projector: list end offsets", "err", err)
			}
			continue
		}
		added := map[string]map[int32]kgo.Offset{}
		p.mu.Lock()
		for k, end := range ends {
			if _, known := p.end[k]; !known {
				p.next[k] = 0
				add(added, k, kgo.NewOffset().AtStart())
			}
			p.end[k] = end
		}
		p.mu.Unlock()
		if len(added) > 0 {
			p.log.Info("projector: new partitions", "partitions", added)
			cl.AddConsumePartitions(added)
		}
		p.updateLag()
	}
}

func (p *Projector) updateLag() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, end := range p.end {
		p.m.setLag(k.topic, k.partition, end-p.next[k])
	}
}

func add(m map[string]map[int32]kgo.Offset, k tp, o kgo.Offset) {
	if m[k.topic] == nil {
		m[k.topic] = map[int32]kgo.Offset{}
	}
	m[k.topic][k.partition] = o
}

// listEnds returns the last stable offset of every partition of every
// topic: what a read-committed reader can reach.
func listEnds(ctx context.Context, adm *kadm.Client) (map[tp]int64, error) {
	listed, err := adm.ListCommittedOffsets(ctx, events.Topics()...)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("projector: list end offsets: %w", err)
	}
	out := map[tp]int64{}
	listed.Each(func(o kadm.ListedOffset) { out[tp{o.Topic, o.Partition}] = o.Offset })
	return out, nil
}

// listEndsOnce is listEnds with a client of its own.
func listEndsOnce(ctx context.Context, c kafka.Config) (map[tp]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.ClientID(c.ClientID), kgo.DialTimeout(c.DialTimeout))
	if err != nil {
		return nil, fmt.Errorf("%w: kafka: %w", ErrInvalidConfig, err)
	}
	defer cl.Close()
	return listEnds(ctx, kadm.NewClient(cl))
}

// loadOffsets reads projector_offsets of schema.
func loadOffsets(ctx context.Context, db beginner, schema string) (map[tp]int64, error) {
	out := map[tp]int64{}
	err := inTx(ctx, db, schema, func(tx pgx.Tx) error {
		return readOffsets(ctx, tx, out)
	})
	if err != nil {
		return nil, fmt.Errorf("projector: load offsets: %w", err)
	}
	return out, nil
}

func readOffsets(ctx context.Context, tx pgx.Tx, out map[tp]int64) error {
	rows, err := tx.Query(ctx, q("offsets_load"))
	if err != nil {
		return err
	}
	var k tp
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&k.topic, &k.partition, &n}, func() error {
		out[k] = n
		return nil
	})
	return err
}

// clientOpts are the kgo options of every reader here: read committed only,
// and control records kept, because a transaction's commit marker takes an
// offset too; folding it moves next_offset to the log's end, so a caught-up
// projector's offsets equal the end offsets Replay compares them with.
func clientOpts(c kafka.Config) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.ClientID(c.ClientID),
		kgo.DialTimeout(c.DialTimeout),
		kgo.FetchMaxWait(c.FetchMaxWait),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	}
}
