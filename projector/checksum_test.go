package projector_test

import (
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	. "github.com/drovehq/drove/projector"
)

// TestChecksumDetectsChangedMissingAndExtraRows folds the scenario into a
// schema, then changes one row, removes one and adds one, each in turn,
// and checks the table's checksum moves every time and comes back when the
// table does: the per-row hashes are summed, so the order rows are read in
// does not matter but every row does.
func TestChecksumDetectsChangedMissingAndExtraRows(t *testing.T) {
	e := newEnv(t)
	const schema = "sums"
	if err := ApplySchema(e.ctx, e.pool, schema); err != nil {
		t.Fatal(err)
	}
	var recs []kafka.Raw
	for i, v := range scenario() {
		topic, _ := v.Topic()
		b, err := events.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, kafka.Raw{Topic: topic, Offset: int64(i), Key: []byte(v.Key), Value: b})
	}
	if err := Fold(e.ctx, e.pool, schema, recs, 500); err != nil {
		t.Fatal(err)
	}
	sum := func(table string) Checksum {
		t.Helper()
		sums, err := Checksums(e.ctx, e.pool, schema)
		if err != nil {
			t.Fatal(err)
		}
		return sums[table]
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := e.pool.Exec(e.ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for _, table := range []string{"nodes", "event_log"} {
		base := sum(table)
		if base == (Checksum{}) {
			t.Fatalf("%s: no checksum", table)
		}
		steps := []struct{ name, do, undo string }{
			{"changed row", `UPDATE sums.nodes SET free_memory_mib = free_memory_mib + 1 WHERE name = 'n1'`,
				`UPDATE sums.nodes SET free_memory_mib = free_memory_mib - 1 WHERE name = 'n1'`},
			{"missing row", `CREATE TABLE sums.kept AS SELECT * FROM sums.nodes WHERE name = 'n2';
				DELETE FROM sums.nodes WHERE name = 'n2'`,
				`INSERT INTO sums.nodes SELECT * FROM sums.kept; DROP TABLE sums.kept`},
			{"extra row", `INSERT INTO sums.nodes SELECT 'n3', group_name, total_memory_mib, total_disk_mib,
				total_cpus, total_spindles, free_memory_mib, free_disk_mib, offline, drained, vm_capable,
				tags, updated_at FROM sums.nodes WHERE name = 'n2'`,
				`DELETE FROM sums.nodes WHERE name = 'n3'`},
		}
		if table == "event_log" {
			steps = []struct{ name, do, undo string }{
				{"changed row", `UPDATE sums.event_log SET payload = (payload::jsonb || '{"x": 1}')::json WHERE seq = 2`,
					`UPDATE sums.event_log SET payload = (payload::jsonb - 'x')::json WHERE seq = 2`},
				{"missing row", `CREATE TABLE sums.kept AS SELECT * FROM sums.event_log WHERE seq = 3;
					DELETE FROM sums.event_log WHERE seq = 3`,
					`INSERT INTO sums.event_log SELECT * FROM sums.kept; DROP TABLE sums.kept`},
				{"extra row", `INSERT INTO sums.event_log (id, topic, partition, "offset", type, version, time, key, payload)
					SELECT id || '-copy', topic, partition, "offset" + 1000, type, version, time, key, payload
					FROM sums.event_log WHERE seq = 1`,
					`DELETE FROM sums.event_log WHERE id LIKE '%-copy'`},
			}
		}
		for _, s := range steps {
			exec(s.do)
			if got := sum(table); got == base {
				t.Errorf("%s: a %s leaves the checksum %+v", table, s.name, got)
			}
			exec(s.undo)
			if got := sum(table); got != base {
				t.Errorf("%s: undoing a %s gives %+v, want %+v", table, s.name, got, base)
			}
		}
	}
}
