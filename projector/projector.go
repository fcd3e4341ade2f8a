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
	// The reader starts each partition at the offset the views recorded,
	// or at the start of a partition they never read, and picks up
	// partitions added to a topic while it runs.
	r, err := kafka.NewReader(ctx, p.cfg.Kafka, kafka.ReadOptions{Topics: events.Topics(), From: stored,
		Follow: true, MaxRecords: p.cfg.BatchSize, MaxFetchBytes: p.cfg.BatchBytes, Refresh: p.cfg.LagInterval})
	if err != nil {
		return err
	}
	defer r.Close()
	p.mu.Lock()
	p.next, p.end = r.Position(), r.Ends()
	p.mu.Unlock()
	p.updateLag()
	p.log.Info("projector: folding", "partitions", len(p.next), "resumed", len(stored))
	deferred, err := p.bulkCatchUp(ctx, conn, stored, r)
	if err != nil {
		return err
	}

	var wg sync.WaitGroup
	wctx, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }()
	wg.Go(func() { p.watchEnds(wctx, r) })
	return p.foldAll(ctx, conn, r, deferred)
}

// foldAll folds every batch of r through conn, one transaction a batch,
// until ctx is done or something fails.
//
// deferred are indexes dropped for a bulk catch-up (bulk.go): they are
// built once the fold first reaches the ends the reader found.
func (p *Projector) foldAll(ctx context.Context, conn *pgxpool.Conn, r *kafka.Reader, deferred []deferredIndex) error {
	build := func() error {
		if len(deferred) == 0 {
			return nil
		}
		if err := buildIndexes(ctx, p.pool, p.cfg.Schema, deferred); err != nil {
			return err
		}
		p.log.Info("projector: caught up; secondary indexes built", "indexes", len(deferred))
		deferred = nil
		return nil
	}
	if r.CaughtUp() { // nothing to fold before following (read before readAhead starts)
		if err := build(); err != nil {
			return err
		}
	}
	// The next batch is fetched and decoded while this one is folded.
	batches, stopReading := readAhead(ctx, r, p.cfg.BatchBytes)
	defer stopReading()
	folded := 0
	for {
		b, ok := <-batches
		if ctx.Err() != nil {
			return nil // nothing of this batch was folded; the offsets say so
		}
		if !ok {
			return kafka.ErrClosed
		}
		if b.err != nil {
			return fmt.Errorf("projector: %w", b.err)
		}
		if len(b.b.Next) == 0 {
			continue
		}
		res, err := p.f.foldDecoded(ctx, conn, b.b.Records, b.items, b.prep, b.b.Next)
		if err != nil {
			if ctx.Err() != nil {
				return nil // rolled back, or committed and recorded: either way the offsets are right
			}
			return fmt.Errorf("projector: fold %d records: %w", len(b.b.Records), err)
		}
		p.advance(res, r.Ends())
		folded += res.records
		if b.b.CaughtUp {
			if err := build(); err != nil {
				if ctx.Err() != nil {
					return nil // rolled back: still recorded, built by the next Run
				}
				return fmt.Errorf("projector: %w", err)
			}
		}
		if p.afterCommit != nil {
			p.afterCommit(folded)
		}
	}
}

// advance records a committed batch's next offsets and the reader's ends,
// for the lag gauge.
func (p *Projector) advance(res foldResult, ends kafka.Positions) {
	p.mu.Lock()
	for k, n := range res.next {
		p.next[k] = n
	}
	for k, end := range ends {
		p.end[k] = max(p.end[k], end)
	}
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

// watchEnds refreshes the lag gauge every LagInterval from the reader's
// ends (which it re-lists every LagInterval), so the lag shows while a
// batch is slow to fold too.
func (p *Projector) watchEnds(ctx context.Context, r *kafka.Reader) {
	t := time.NewTicker(p.cfg.LagInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		for k, end := range r.Ends() {
			p.end[k] = max(p.end[k], end)
		}
		p.mu.Unlock()
		p.updateLag()
	}
}

func (p *Projector) updateLag() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, end := range p.end {
		p.m.setLag(k.Topic, k.Partition, end-p.next[k])
	}
}

// listBounds returns the start and the end (last stable offset) of every
// partition of every topic: where a reader from the start begins and what
// a read-committed reader can reach.
func listBounds(ctx context.Context, c kafka.Config) (starts, ends kafka.Positions, err error) {
	starts, ends, err = kafka.Bounds(ctx, c, events.Topics()...)
	if err != nil {
		return nil, nil, fmt.Errorf("projector: list offsets: %w", err)
	}
	return starts, ends, nil
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
	_, err = pgx.ForEachRow(rows, []any{&k.Topic, &k.Partition, &n}, func() error {
		out[k] = n
		return nil
	})
	return err
}
