package projector_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/drovehq/drove/events"
	. "github.com/drovehq/drove/projector"
)

// TestBatchBytesBoundsATransaction folds the scenario with a bound of one
// byte: every record is a transaction of its own, whatever BatchSize
// says, and the views still equal a replay's.
func TestBatchBytesBoundsATransaction(t *testing.T) {
	e := newEnv(t)
	evs := append(scenario(), instanceMigration()...)
	e.append(evs...)
	p := e.projector(func(c *Config) { c.BatchBytes = 1 })
	var commits, folded int
	p.SetAfterCommit(func(n int) { commits++; folded = n })
	stop := e.start(p)
	e.waitCaughtUp("drove")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if folded != len(evs) || commits < len(evs) {
		t.Errorf("%d records folded in %d transactions, want %d in one each", folded, commits, len(evs))
	}
	e.replayEqual()
}

// TestLiveBulkCatchUp starts a live projector on an empty schema with a
// bulk catch-up bound of one record: it folds without the secondary
// indexes and builds them once caught up. The first run crashes mid-way
// (its indexes still dropped and recorded), the second finishes, builds
// them and then follows the log as usual; the views equal a replay's
// (also a bulk fold), and both schemas end with every index and
// constraint of a schema that never deferred any, defined alike.
func TestLiveBulkCatchUp(t *testing.T) {
	e := newEnv(t)
	for range 4 {
		evs := scenario()
		for i := range evs {
			evs[i].ID = events.NewID()
		}
		e.append(evs...)
	}
	bulk := func(c *Config) { c.BulkCatchUp, c.BatchSize = 1, 7 }
	p1 := e.projector(bulk)
	batches := 0
	p1.SetBeforeCommit(func(context.Context) error {
		if batches++; batches == 3 {
			return errors.New("simulated crash before commit")
		}
		return nil
	})
	if err := p1.Run(e.ctx); err == nil || !strings.Contains(err.Error(), "simulated crash") {
		t.Fatalf("Run with a crashing commit = %v", err)
	}
	var deferred int
	e.get(`SELECT count(*) FROM projector_deferred_indexes`, &deferred)
	if deferred < 5 {
		t.Fatalf("after a crash mid catch-up, %d indexes recorded as deferred", deferred)
	}
	// Each index is built in a transaction of its own, with its record: a
	// build cut short leaves those it built, and the next catch-up builds
	// the others. One built here, as by a builder that died after it.
	if pending, err := BuildOneDeferredIndex(e.ctx, e.pool, "drove"); err != nil || pending != deferred {
		t.Fatalf("building one of %d deferred indexes: %d pending, %v", deferred, pending, err)
	}

	stop := e.start(e.projector(bulk))
	e.waitCaughtUp("drove")
	e.append(instanceMigration()...) // folded after the build, indexes in place
	e.waitCaughtUp("drove")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	e.get(`SELECT count(*) FROM projector_deferred_indexes`, &deferred)
	if deferred != 0 {
		t.Errorf("caught up with %d indexes still deferred", deferred)
	}
	// Replay folds in bulk too: its schema, kept, must end with the same
	// indexes.
	cfg := e.cfg
	cfg.KeepReplay = true
	rep, err := Replay(e.ctx, cfg, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.pool.Exec(e.ctx, `DROP SCHEMA `+rep.ReplaySchema+` CASCADE`) })
	if !rep.Equal {
		t.Fatalf("replay not equal: %+v", rep.Tables)
	}
	if err := ApplySchema(e.ctx, e.pool, "never_deferred"); err != nil {
		t.Fatal(err)
	}
	want := indexDefs(t, e, "never_deferred")
	if len(want) < 20 {
		t.Fatalf("only %d indexes and constraints in a fresh schema: %q", len(want), want)
	}
	for _, schema := range []string{"drove", rep.ReplaySchema} {
		if got := indexDefs(t, e, schema); !slices.Equal(got, want) {
			t.Errorf("%s: indexes after a bulk fold differ from the schema's own:\ngot  %q\nwant %q", schema, got, want)
		}
	}
}

// indexDefs lists schema's indexes and constraints, the schema's name
// taken out of their definitions.
func indexDefs(t *testing.T, e *env, schema string) []string {
	t.Helper()
	rows, err := e.pool.Query(e.ctx, `
		SELECT tablename || ' ' || indexname || ' ' || indexdef FROM pg_indexes WHERE schemaname = $1
		UNION ALL
		SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
		FROM pg_constraint WHERE connamespace = $1::regnamespace`, schema)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for i := range out {
		out[i] = strings.ReplaceAll(out[i], schema+".", "S.")
	}
	slices.Sort(out)
	return out
}
