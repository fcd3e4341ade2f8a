package projector

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/drovehq/drove/events/kafka"
)

// Test seams for the external test package (projector_test), which cannot
// be internal: it imports testenv, whose embedded deployment imports this
// package.

// ComparedTables are the tables Replay compares.
var ComparedTables = comparedTables

// Checksum is one table's row count and md5.
type Checksum = checksum

// SetBeforeCommit runs fn before each batch's commit; an error aborts it.
func (p *Projector) SetBeforeCommit(fn func(context.Context) error) { p.f.beforeCommit = fn }

// SetAfterCommit calls fn after each committed batch with the records
// folded so far.
func (p *Projector) SetAfterCommit(fn func(folded int)) { p.afterCommit = fn }

// Undecodable is the undecodable counter of topic.
func (p *Projector) Undecodable(topic string) float64 {
	return testutil.ToFloat64(p.m.undecodable.WithLabelValues(topic))
}

// Fold folds recs into schema in batches of batch, as Run and Replay do
// with what kafka.Reader hands over.
func Fold(ctx context.Context, pool *pgxpool.Pool, schema string, recs []kafka.Raw, batch int) error {
	m, err := newMetrics(nil)
	if err != nil {
		return err
	}
	f := &folder{schema: schema, log: Config{}.withDefaults().Logger, m: m}
	for len(recs) > 0 {
		n := min(batch, len(recs))
		next := kafka.Positions{}
		for _, r := range recs[:n] {
			k := tp{Topic: r.Topic, Partition: r.Partition}
			next[k] = max(next[k], r.Offset+1)
		}
		if _, err := f.fold(ctx, pool, recs[:n], next); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

// Checksums returns the checksum of every compared table of schema.
func Checksums(ctx context.Context, pool *pgxpool.Pool, schema string) (map[string]Checksum, error) {
	var sums map[string]checksum
	err := inTx(ctx, pool, schema, func(tx pgx.Tx) error {
		var err error
		sums, err = checksums(ctx, tx)
		return err
	})
	return sums, err
}

// CaughtUp reports whether schema's offsets have reached the log's end.
func CaughtUp(ctx context.Context, cfg Config, pool *pgxpool.Pool, schema string) (bool, error) {
	_, ends, err := listBounds(ctx, cfg.withDefaults().Kafka)
	if err != nil {
		return false, err
	}
	live, err := loadOffsets(ctx, pool, schema)
	if err != nil {
		return false, err
	}
	for k, end := range ends {
		if live[k] < end {
			return false, nil
		}
	}
	return true, nil
}

// Get scans the one row sql returns in schema.
func Get(ctx context.Context, pool *pgxpool.Pool, schema, sql string, dest ...any) error {
	return inTx(ctx, pool, schema, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, sql).Scan(dest...)
	})
}

// ApplySchemaUpTo leaves schema as a build whose last numbered file was
// version left it: the files up to version applied and recorded, then
// views, the views that build made (its views.sql, or what its numbered
// files made before there was one).
func ApplySchemaUpTo(ctx context.Context, pool *pgxpool.Pool, schema string, version int, views string) error {
	if err := createSchema(ctx, pool, schema); err != nil {
		return err
	}
	ms, err := schemaFiles()
	if err != nil {
		return err
	}
	return inTx(ctx, pool, schema, func(tx pgx.Tx) error {
		for _, m := range ms {
			if m.version > version {
				break
			}
			if err := m.apply(ctx, tx); err != nil {
				return err
			}
		}
		if views == "" {
			return nil
		}
		_, err := tx.Exec(ctx, views)
		return err
	})
}

// SchemaVersions lists the versions of the embedded schema files, in order.
func SchemaVersions() ([]int, error) {
	files, err := schemaFiles()
	var out []int
	for _, f := range files {
		out = append(out, f.version)
	}
	return out, err
}

// BuildOneDeferredIndex builds one of schema's deferred indexes, as a
// builder cut short after it would have, and returns how many were
// recorded before.
func BuildOneDeferredIndex(ctx context.Context, pool *pgxpool.Pool, schema string) (int, error) {
	pending, err := pendingIndexes(ctx, pool, schema)
	if err != nil || len(pending) == 0 {
		return 0, err
	}
	return len(pending), buildIndex(ctx, pool, schema, pending[len(pending)-1])
}
