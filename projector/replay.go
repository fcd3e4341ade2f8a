package projector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/drovehq/drove/events/kafka"
)

// comparedTables are the tables Replay checks, each with a checksum_<name>
// query in sql/checksum.sql.
var comparedTables = []string{
	"event_log", "groups", "nodes", "instances", "requests", "plans", "jobs",
	"opcodes", "moves", "move_syncs", "move_status", "undecodable_events",
	"migration_phases", "settings", "node_actions",
}

// Report is what Replay found.
type Report struct {
	// Tables compares each view table of the live schema with its rebuild.
	Tables []TableReport
	// Equal is true when every table is equal and the live views had
	// folded the whole log Replay folded (LiveBehind is false).
	Equal bool
	// ReplaySchema is where the log was folded; dropped after Replay
	// unless Config.KeepReplay.
	ReplaySchema string
	// Events is the number of records folded (events and undecodable
	// records; duplicates included).
	Events int
	// Duration is the whole Replay; FoldDuration only the fold, for
	// throughput (Events / FoldDuration).
	Duration     time.Duration
	FoldDuration time.Duration
	// LiveBehind says the live projector had not reached the log's end
	// when the live views were read (after waiting Config.ReplayWait):
	// the tables then differ by what it had not folded yet. Behind lists
	// those partitions.
	LiveBehind bool
	Behind     []PartitionLag
}

// TableReport compares one table.
type TableReport struct {
	Name           string
	LiveRows       int64
	ReplayRows     int64
	LiveChecksum   string
	ReplayChecksum string
	Equal          bool
}

// PartitionLag is a partition the live views had not folded to its end.
type PartitionLag struct {
	Topic     string
	Partition int32
	LiveNext  int64 // the live projector's next offset
	End       int64 // the offset Replay folded to
}

// Replay rebuilds the views from offset zero into a fresh schema,
// <Schema>_replay_<unix-nanos>, and compares them table by table with the
// live schema:
//
//  1. it lists the end (last stable offset) of every partition;
//  2. it waits, at most ReplayWait, for the live projector's offsets to
//     reach those ends;
//  3. it reads the live offsets and checksums in one snapshot;
//  4. it folds every partition from its start up to the larger of the end
//     and the live offset, so a caught-up live schema is compared with a
//     rebuild of exactly what it folded;
//  5. it checksums the rebuild and compares.
//
// The live schema must have been migrated; Replay never writes to it.
func Replay(ctx context.Context, cfg Config, pool *pgxpool.Pool) (Report, error) {
	err := cfg.Validate()
	if pool == nil {
		err = errors.Join(err, fmt.Errorf("%w: pool missing", ErrInvalidConfig))
	}
	if err != nil {
		return Report{}, err
	}
	cfg = cfg.withDefaults()
	began := time.Now()
	rep := Report{ReplaySchema: fmt.Sprintf("%s_replay_%d", cfg.Schema, began.UnixNano())}
	log := cfg.Logger.With("component", "projector", "schema", rep.ReplaySchema)

	if err := checkSchemaVersion(ctx, pool, cfg.Schema); err != nil {
		return rep, err
	}
	ends, starts, err := listBounds(ctx, cfg.Kafka)
	if err != nil {
		return rep, err
	}
	live, liveSums, err := waitForLive(ctx, cfg, pool, ends, starts)
	if err != nil {
		return rep, err
	}

	if err := ApplySchema(ctx, pool, rep.ReplaySchema); err != nil {
		return rep, err
	}
	if !cfg.KeepReplay {
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if _, err := pool.Exec(dctx, `DROP SCHEMA `+quoteIdent(rep.ReplaySchema)+` CASCADE`); err != nil {
				log.Warn("projector: drop replay schema", "err", err)
			}
		}()
	}

	targets := map[tp]int64{}
	for k, end := range ends {
		targets[k] = max(end, live[k])
		if live[k] < end && end > starts[k] {
			rep.Behind = append(rep.Behind, PartitionLag{Topic: k.topic, Partition: k.partition, LiveNext: live[k], End: end})
		}
	}
	slices.SortFunc(rep.Behind, func(a, b PartitionLag) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	rep.LiveBehind = len(rep.Behind) > 0

	m, err := newMetrics(prometheus.NewRegistry()) // a replay's counts are its report
	if err != nil {
		return rep, err
	}
	f := &folder{schema: rep.ReplaySchema, log: log, m: m}
	foldStart := time.Now()
	rep.Events, err = foldRange(ctx, cfg, pool, f, starts, targets)
	rep.FoldDuration = time.Since(foldStart)
	if err != nil {
		return rep, err
	}

	var replaySums map[string]checksum
	err = inTx(ctx, pool, rep.ReplaySchema, func(tx pgx.Tx) error {
		replaySums, err = checksums(ctx, tx)
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("projector: checksum %s: %w", rep.ReplaySchema, err)
	}
	rep.Equal = !rep.LiveBehind
	for _, name := range comparedTables {
		l, r := liveSums[name], replaySums[name]
		t := TableReport{Name: name, LiveRows: l.rows, ReplayRows: r.rows,
			LiveChecksum: l.md5, ReplayChecksum: r.md5, Equal: l == r}
		rep.Equal = rep.Equal && t.Equal
		rep.Tables = append(rep.Tables, t)
	}
	rep.Duration = time.Since(began)
	log.Info("projector: replay done", "equal", rep.Equal, "live_behind", rep.LiveBehind,
		"events", rep.Events, "fold", rep.FoldDuration, "duration", rep.Duration)
	return rep, nil
}

type checksum struct {
	rows int64
	md5  string
}

func checksums(ctx context.Context, tx pgx.Tx) (map[string]checksum, error) {
	out := map[string]checksum{}
	for _, name := range comparedTables {
		var c checksum
		if err := tx.QueryRow(ctx, q("checksum_"+name)).Scan(&c.rows, &c.md5); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = c
	}
	return out, nil
}

// waitForLive polls the live offsets until they reach ends or ReplayWait
// passes, then reads the offsets and checksums in one repeatable-read
// snapshot, so they describe the same moment even while the live
// projector goes on.
func waitForLive(ctx context.Context, cfg Config, pool *pgxpool.Pool, ends, starts map[tp]int64) (map[tp]int64, map[string]checksum, error) {
	deadline := time.Now().Add(cfg.ReplayWait)
	for cfg.ReplayWait > 0 {
		live, err := loadOffsets(ctx, pool, cfg.Schema)
		if err != nil {
			return nil, nil, err
		}
		caughtUp := true
		for k, end := range ends {
			if end > starts[k] && live[k] < end {
				caughtUp = false
			}
		}
		if caughtUp || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond): // polling a condition, bounded by the deadline
		}
	}
	live := map[tp]int64{}
	var sums map[string]checksum
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := setSearchPath(ctx, tx, cfg.Schema); err != nil {
		return nil, nil, err
	}
	if err := readOffsets(ctx, tx, live); err != nil {
		return nil, nil, fmt.Errorf("projector: live offsets: %w", err)
	}
	if sums, err = checksums(ctx, tx); err != nil {
		return nil, nil, fmt.Errorf("projector: checksum %s: %w", cfg.Schema, err)
	}
	return live, sums, tx.Commit(ctx)
}

// listBounds returns the end (last stable offset) and the start of every
// partition of every topic.
func listBounds(ctx context.Context, c kafka.Config) (ends, starts map[tp]int64, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.ClientID(c.ClientID), kgo.DialTimeout(c.DialTimeout))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: kafka: %w", ErrInvalidConfig, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if ends, err = listEnds(ctx, adm); err != nil {
		return nil, nil, err
	}
	listed, err := adm.ListStartOffsets(ctx, topicsOf(ends)...)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("projector: list start offsets: %w", err)
	}
	starts = map[tp]int64{}
	listed.Each(func(o kadm.ListedOffset) { starts[tp{o.Topic, o.Partition}] = o.Offset })
	return ends, starts, nil
}

func topicsOf(m map[tp]int64) []string {
	var out []string
	for k := range m {
		if !slices.Contains(out, k.topic) {
			out = append(out, k.topic)
		}
	}
	return out
}

// foldRange folds every partition from its start up to (not including) its
// target offset, in batches of BatchSize, and returns the data records
// folded. It reads as the live projector does (read committed, control
// records kept), so it stops at the same offsets.
func foldRange(ctx context.Context, cfg Config, pool *pgxpool.Pool, f *folder, starts, targets map[tp]int64) (int, error) {
	from := map[string]map[int32]kgo.Offset{}
	pending := map[tp]int64{}
	for k, target := range targets {
		if target > starts[k] {
			pending[k] = target
			add(from, k, kgo.NewOffset().AtStart())
		}
	}
	if len(pending) == 0 {
		return 0, nil
	}
	cl, err := kgo.NewClient(append(clientOpts(cfg.Kafka), kgo.ConsumePartitions(from))...)
	if err != nil {
		return 0, fmt.Errorf("%w: kafka: %w", ErrInvalidConfig, err)
	}
	defer cl.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()

	// The reader owns pending: it stops after the batch that reaches the
	// last target, and fetches and decodes the next batch while this one
	// is folded.
	batches, stopReading := readAhead(ctx, func(ctx context.Context) (kgo.Fetches, []*kgo.Record, bool) {
		fs := cl.PollRecords(ctx, cfg.BatchSize)
		var batch []*kgo.Record
		for _, r := range fs.Records() {
			k := tp{r.Topic, r.Partition}
			target, ok := pending[k]
			if !ok || r.Offset >= target {
				continue // past what we were asked for
			}
			if r.Offset >= target-1 {
				delete(pending, k)
			}
			batch = append(batch, r)
		}
		return fs, batch, len(pending) > 0
	})
	defer stopReading()

	folded := 0
	for b := range batches {
		if err := ctx.Err(); err != nil {
			break
		}
		var errs []error
		b.fs.EachError(func(t string, p int32, err error) {
			errs = append(errs, fmt.Errorf("projector: replay: fetch %s/%d: %w", t, p, err))
		})
		if err := errors.Join(errs...); err != nil {
			return folded, err
		}
		if len(b.recs) == 0 {
			continue
		}
		res, err := f.foldDecoded(ctx, conn, b.recs, b.items)
		if err != nil {
			return folded, fmt.Errorf("projector: replay: %w", err)
		}
		folded += res.records
	}
	if err := ctx.Err(); err != nil {
		stopReading() // pending is the reader's until it has stopped
		return folded, fmt.Errorf("projector: replay: %d partitions unfinished: %w", len(pending), err)
	}
	return folded, nil
}
