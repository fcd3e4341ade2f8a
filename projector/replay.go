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

	"github.com/drovehq/drove/events/kafka"
)

// comparedTables are the tables Replay checks, each with a checksum_<name>
// query in sql/checksum.sql.
var comparedTables = []string{
	"event_log", "groups", "nodes", "instances", "requests", "plans", "jobs",
	"opcodes", "moves", "move_syncs", "move_status", "undecodable_events",
	"migration_phases", "settings", "history_subjects", "node_actions", "node_heartbeats",
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
	starts, ends, err := listBounds(ctx, cfg.Kafka)
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
			rep.Behind = append(rep.Behind, PartitionLag{Topic: k.Topic, Partition: k.Partition, LiveNext: live[k], End: end})
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
	rep.Events, err = foldBulk(ctx, cfg, pool, f, starts, targets, nil, cfg.KeepReplay)
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
			LiveChecksum: l.hash, ReplayChecksum: r.hash, Equal: l == r}
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
	hash string // md5 of the sums of the rows' md5 halves (sql/checksum.sql)
}

func checksums(ctx context.Context, tx pgx.Tx) (map[string]checksum, error) {
	out := map[string]checksum{}
	for _, name := range comparedTables {
		var c checksum
		if err := tx.QueryRow(ctx, q("checksum_"+name)).Scan(&c.rows, &c.hash); err != nil {
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

// foldRange folds every partition from its start up to (not including) its
// target offset, in batches of BatchSize, and returns the data records
// folded. It reads as the live projector does (read committed, control
// records kept), so it stops at the same offsets; the reader reads to the
// ends it finds, at or past the targets, and what lies past them is not
// folded. stop, when not nil, also ends a partition at the first record it
// returns true for, that record not folded (a point in time, asof.go).
func foldRange(ctx context.Context, cfg Config, pool *pgxpool.Pool, f *folder, starts, targets map[tp]int64, stop func(kafka.Raw) bool) (int, error) {
	var topics []string
	parts := map[string][]int32{}
	for k, target := range targets {
		if target > starts[k] {
			if _, ok := parts[k.Topic]; !ok {
				topics = append(topics, k.Topic)
			}
			parts[k.Topic] = append(parts[k.Topic], k.Partition)
		}
	}
	if len(topics) == 0 {
		return 0, nil
	}
	r, err := kafka.NewReader(ctx, cfg.Kafka, kafka.ReadOptions{Topics: topics, Partitions: parts,
		MaxRecords: cfg.BatchSize, MaxFetchBytes: cfg.BatchBytes})
	if err != nil {
		return 0, fmt.Errorf("projector: replay: %w", err)
	}
	defer r.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()

	// The next batch is fetched and decoded while this one is folded.
	batches, stopReading := readAhead(ctx, r, cfg.BatchBytes)
	defer stopReading()
	folded := 0
	for b := range batches {
		if err := ctx.Err(); err != nil {
			break
		}
		if b.err != nil {
			return folded, fmt.Errorf("projector: replay: %w", b.err)
		}
		recs, items, next := upTo(b, targets, stop)
		if len(next) == 0 {
			continue
		}
		prep := b.prep
		if len(items) != len(b.items) {
			prep = nil // prepared for the whole batch; this is a part of it
		}
		res, err := f.foldDecoded(ctx, conn, recs, items, prep, next)
		if err != nil {
			return folded, fmt.Errorf("projector: replay: %w", err)
		}
		folded += res.records
	}
	if err := ctx.Err(); err != nil {
		return folded, fmt.Errorf("projector: replay: unfinished: %w", err)
	}
	return folded, nil
}

// upTo is the part of b before each partition's target. A record stop
// returns true for becomes its partition's target, for this batch and the
// ones after it.
func upTo(b polled, targets map[tp]int64, stop func(kafka.Raw) bool) ([]kafka.Raw, []item, kafka.Positions) {
	if stop != nil {
		for _, r := range b.b.Records {
			k := tp{Topic: r.Topic, Partition: r.Partition}
			if r.Offset < targets[k] && stop(r) {
				targets[k] = r.Offset
			}
		}
	}
	next := kafka.Positions{}
	for k, n := range b.b.Next {
		if t := targets[k]; n > t {
			n = t
		}
		if n > 0 {
			next[k] = n
		}
	}
	recs := make([]kafka.Raw, 0, len(b.b.Records))
	items := make([]item, 0, len(b.items))
	for i, r := range b.b.Records {
		if r.Offset < targets[tp{Topic: r.Topic, Partition: r.Partition}] {
			recs = append(recs, r)
			items = append(items, b.items[i])
		}
	}
	return recs, items, next
}
