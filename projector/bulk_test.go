package projector_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	. "github.com/drovehq/drove/projector"
)

// TestReplayEndsWithTheLiveIndexes replays the scenario, which drops the
// indexes the fold does not read and builds them after it (bulk.go), and
// checks the replay schema ends with every index and constraint of the
// live one, defined alike.
func TestReplayEndsWithTheLiveIndexes(t *testing.T) {
	e := newEnv(t)
	e.append(append(scenario(), instanceMigration()...)...)
	e.run()
	cfg := e.cfg
	cfg.KeepReplay = true
	rep, err := Replay(e.ctx, cfg, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Equal {
		t.Fatalf("replay not equal: %+v", rep.Tables)
	}
	t.Cleanup(func() { _, _ = e.pool.Exec(e.ctx, `DROP SCHEMA `+rep.ReplaySchema+` CASCADE`) })
	defs := func(schema string) []string {
		t.Helper()
		rows, err := e.pool.Query(e.ctx, `
			SELECT tablename || ' ' || indexname || ' ' || replace(indexdef, $1, 'S.') FROM pg_indexes WHERE schemaname = $2
			UNION ALL
			SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
			FROM pg_constraint WHERE connamespace = $2::regnamespace`, schema+".", schema)
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
	live, replay := defs("drove"), defs(rep.ReplaySchema)
	if len(live) < 20 {
		t.Fatalf("only %d indexes and constraints in the live schema: %q", len(live), live)
	}
	if !slices.Equal(live, replay) {
		t.Errorf("replay's indexes and constraints differ from live's:\nlive   %q\nreplay %q", live, replay)
	}
}

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
