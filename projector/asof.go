package projector

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events/kafka"
)

// Point in time (issue 15): the views as they stood at a bound of the log,
// folded into a schema of their own by the projector's own fold (Replay's
// foldRange, stopped at the bound), so an auditor queries the past with
// plain SQL and the gateway answers ?at= from it. Such a schema is kept
// until dropped; its as_of row (schema/011) says what bound it holds.

// ErrBound is returned by AsOf for a bound it cannot fold to: a time in
// the future (the log does not hold it yet), or no bound at all.
var ErrBound = errors.New("projector: bad point-in-time bound")

// Bound is where a point-in-time fold stops.
type Bound struct {
	// At, when not zero, ends each partition at its first event record
	// whose timestamp is after At. Topics keep CreateTime timestamps and
	// Drove's producer stamps each record with its event's time, so this
	// is the event's own time (to the millisecond).
	At time.Time
	// Offsets, when At is zero, ends each listed partition at its offset
	// (exclusive: a next offset, as projector_offsets records them);
	// partitions not listed are not folded.
	Offsets map[string]map[int32]int64
}

// AsOfView is a point-in-time schema.
type AsOfView struct {
	Name    string                     `json:"name"`
	At      *time.Time                 `json:"at,omitempty"`
	Offsets map[string]map[int32]int64 `json:"offsets,omitempty"`
	Events  int64                      `json:"events"`
	BuiltAt time.Time                  `json:"built_at"`
	Folded  map[string]map[int32]int64 `json:"folded"` // where each partition's fold stopped (next offset)
	Built   bool                       `json:"built"`  // false when AsOf found it already built
	Took    time.Duration              `json:"took"`   // the fold, when Built
}

// AsOfName is the schema a bound folds into: <schema>_at_<UTC time to the
// millisecond>, or <schema>_pos_<hash of the offsets>. Record timestamps
// are milliseconds, so two times within one millisecond fold alike.
func AsOfName(schema string, b Bound) string {
	if !b.At.IsZero() {
		t := b.At.UTC()
		return fmt.Sprintf("%s_at_%s%03d", schema, t.Format("20060102t150405"), t.Nanosecond()/1e6)
	}
	h := sha256.New()
	for _, topic := range slices.Sorted(maps.Keys(b.Offsets)) {
		for _, p := range slices.Sorted(maps.Keys(b.Offsets[topic])) {
			fmt.Fprintf(h, "%s/%d@%d\n", topic, p, b.Offsets[topic][p])
		}
	}
	return schema + "_pos_" + hex.EncodeToString(h.Sum(nil))[:16]
}

// AsOf folds the log up to b into the schema AsOfName(cfg.Schema, b),
// unless it is already there, and returns it. A fold that fails leaves no
// schema behind; two AsOf of one bound at once build it once (an advisory
// lock on its name).
func AsOf(ctx context.Context, cfg Config, pool *pgxpool.Pool, b Bound) (AsOfView, error) {
	err := cfg.Validate()
	if pool == nil {
		err = errors.Join(err, fmt.Errorf("%w: pool missing", ErrInvalidConfig))
	}
	if err != nil {
		return AsOfView{}, err
	}
	cfg = cfg.withDefaults()
	switch {
	case b.At.IsZero() && len(b.Offsets) == 0:
		return AsOfView{}, fmt.Errorf("%w: give a time or offsets", ErrBound)
	case b.At.After(time.Now()):
		return AsOfView{}, fmt.Errorf("%w: %s is in the future", ErrBound, b.At.UTC().Format(time.RFC3339Nano))
	}
	name := AsOfName(cfg.Schema, b)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return AsOfView{}, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, lockKey(name)); err != nil {
		return AsOfView{}, fmt.Errorf("projector: lock %s: %w", name, err)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = conn.Exec(uctx, `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, lockKey(name))
	}()
	if v, err := readAsOf(ctx, pool, name); err == nil {
		return v, nil
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return AsOfView{}, err
	}
	// Not there, or a fold that died half way: build from scratch.
	if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+quoteIdent(name)+` CASCADE`); err != nil {
		return AsOfView{}, err
	}
	v, err := buildAsOf(ctx, cfg, pool, name, b)
	if err != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_, _ = pool.Exec(dctx, `DROP SCHEMA IF EXISTS `+quoteIdent(name)+` CASCADE`)
		return AsOfView{}, err
	}
	return v, nil
}

// buildAsOf folds into a fresh schema name up to b and records the bound.
func buildAsOf(ctx context.Context, cfg Config, pool *pgxpool.Pool, name string, b Bound) (AsOfView, error) {
	began := time.Now()
	if err := ApplySchema(ctx, pool, name); err != nil {
		return AsOfView{}, err
	}
	starts, ends, err := listBounds(ctx, cfg.Kafka)
	if err != nil {
		return AsOfView{}, err
	}
	targets := map[tp]int64{}
	var stop func(kafka.Raw) bool
	if !b.At.IsZero() {
		maps.Copy(targets, ends)
		at := b.At
		// A commit marker carries the broker's clock, not an event's:
		// it never ends a partition, or a log stamped by producers
		// whose clocks lag the broker's would stop at every commit.
		stop = func(r kafka.Raw) bool { return r.Time.After(at) }
	} else {
		for topic, ps := range b.Offsets {
			for p, off := range ps {
				if end, ok := ends[tp{Topic: topic, Partition: p}]; ok {
					targets[tp{Topic: topic, Partition: p}] = min(off, end)
				}
			}
		}
	}
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		return AsOfView{}, err
	}
	f := &folder{schema: name, log: cfg.Logger.With("component", "projector", "schema", name), m: m}
	n, err := foldBulk(ctx, cfg, pool, f, starts, targets, stop, true) // kept: queried by index
	if err != nil {
		return AsOfView{}, err
	}
	var at *time.Time
	if !b.At.IsZero() {
		at = &b.At
	}
	offs, err := json.Marshal(nonNil(b.Offsets))
	if err != nil {
		return AsOfView{}, err
	}
	_, err = pool.Exec(ctx, fmt.Sprintf(`INSERT INTO %s.as_of (name, at, offsets, events, built_at)
		VALUES ($1, $2, $3, $4, now())`, quoteIdent(name)), name, at, string(offs), n)
	if err != nil {
		return AsOfView{}, fmt.Errorf("projector: record the bound of %s: %w", name, err)
	}
	v, err := readAsOf(ctx, pool, name)
	v.Built, v.Took = true, time.Since(began)
	return v, err
}

func nonNil(m map[string]map[int32]int64) map[string]map[int32]int64 {
	if m == nil {
		return map[string]map[int32]int64{}
	}
	return m
}

// readAsOf reads a built point-in-time schema; pgx.ErrNoRows when there
// is none of that name or its fold did not finish.
func readAsOf(ctx context.Context, pool *pgxpool.Pool, name string) (AsOfView, error) {
	var v AsOfView
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, quoteIdent(name)+".as_of").Scan(&exists); err != nil {
		return v, err
	}
	if !exists {
		return v, pgx.ErrNoRows
	}
	var offs []byte
	err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT name, at, offsets, events, built_at FROM %s.as_of`, quoteIdent(name))).
		Scan(&v.Name, &v.At, &offs, &v.Events, &v.BuiltAt)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(offs, &v.Offsets); err != nil {
		return v, err
	}
	if len(v.Offsets) == 0 {
		v.Offsets = nil
	}
	folded, err := loadOffsets(ctx, pool, name)
	v.Folded = map[string]map[int32]int64{}
	for k, n := range folded {
		if v.Folded[k.Topic] == nil {
			v.Folded[k.Topic] = map[int32]int64{}
		}
		v.Folded[k.Topic][k.Partition] = n
	}
	return v, err
}

// ListAsOf lists the point-in-time schemas built beside cfg.Schema.
func ListAsOf(ctx context.Context, cfg Config, pool *pgxpool.Pool) ([]AsOfView, error) {
	cfg = cfg.withDefaults()
	rows, err := pool.Query(ctx, `SELECT nspname FROM pg_namespace
		WHERE starts_with(nspname, $1) OR starts_with(nspname, $2) ORDER BY nspname`,
		cfg.Schema+"_at_", cfg.Schema+"_pos_")
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var out []AsOfView
	for _, n := range names {
		v, err := readAsOf(ctx, pool, n)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // being built, or an unfinished fold AsOf will rebuild
		}
		if err != nil {
			return nil, fmt.Errorf("projector: %s: %w", n, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// DropAsOf drops a point-in-time schema of cfg.Schema; it refuses any
// other schema.
func DropAsOf(ctx context.Context, cfg Config, pool *pgxpool.Pool, name string) error {
	cfg = cfg.withDefaults()
	if !identifier.MatchString(name) ||
		!(strings.HasPrefix(name, cfg.Schema+"_at_") || strings.HasPrefix(name, cfg.Schema+"_pos_")) {
		return fmt.Errorf("%w: %q is not a point-in-time schema of %s", ErrInvalidConfig, name, cfg.Schema)
	}
	if _, err := readAsOf(ctx, pool, name); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	_, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+quoteIdent(name)+` CASCADE`)
	return err
}
