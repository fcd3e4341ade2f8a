package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// A dry run's detail carries its makespan estimate: the two moves of
// node-a1, from its announced 1000 MiB/s link into node-a2's 100 MiB/s,
// share node-a2's link: 3000 MiB in at 100 MiB/s is the bound, 30 s, and
// the release reaches it.
func TestRequestEstimate(t *testing.T) {
	e := newEnv(t)
	e.seed()
	const mib = 1 << 20
	e.exec(`
INSERT INTO requests (id, kind, nodes, mode, dry_run, requested_at, planned_at, plans) VALUES
  ('r9', 'evacuation', '{node-a1}', 'all', true, now(), now(), 1);
INSERT INTO plans (request, moved, failed, jobs, score_before, score_after, computed_at) VALUES
  ('r9', '[]', '[]', '[{"index":0,"opcodes":[{"op_id":"OP_INSTANCE_MIGRATE","instance":"z1","from":"node-a1","to":"node-a2"}]},
                    {"index":1,"opcodes":[{"op_id":"OP_INSTANCE_MIGRATE","instance":"z2","from":"node-a1","to":"node-a2"}]}]',
   1, 1, now());
INSERT INTO jobs (request, idx, instance) VALUES ('r9', 0, 'z1'), ('r9', 1, 'z2');`)
	for _, n := range []events.NodeAnnounced{
		{Name: "node-a1", Group: "g1", SendBytesPerSecond: 1000 * mib, ReceiveBytesPerSecond: 1000 * mib},
		{Name: "node-a2", Group: "g1", SendBytesPerSecond: 100 * mib, ReceiveBytesPerSecond: 100 * mib},
	} {
		e.logEvent(events.TypeNodeAnnounced, "", "", n)
	}
	for name, disk := range map[string]int64{"z1": 1000, "z2": 2000} {
		e.logEvent(events.TypeInstanceDeclared, "", name, events.InstanceDeclared{Name: name, Owner: "acct-1",
			Storage: events.StorageZFSLocal, RunState: events.RunRunning, PrimaryNode: "node-a1",
			Size: events.Size{MemoryMiB: 1024, VCPUs: 1, DisksMiB: []int64{disk}}})
	}
	var d struct {
		Estimate *struct {
			FinishSeconds     float64 `json:"finish_seconds"`
			ExpectedFinishAt  string  `json:"expected_finish_at"`
			LowerBoundSeconds float64 `json:"lower_bound_seconds"`
			LowerBound        struct {
				Node string `json:"node"`
			} `json:"lower_bound"`
			Bytes     int64 `json:"bytes"`
			JobsAhead int   `json:"jobs_ahead"`
		} `json:"estimate"`
	}
	e.get("/v1/requests/r9", &d)
	est := d.Estimate
	if est == nil || est.LowerBoundSeconds != 30 || est.FinishSeconds != 30 || est.LowerBound.Node != "node-a2" ||
		est.Bytes != 3000*mib || est.JobsAhead != 2 || est.ExpectedFinishAt == "" {
		t.Fatalf("estimate %+v; want both moves ahead, 30 s, bound 30 s on node-a2's link", est)
	}
}

// An instance's estimate builds the switch's downtime from its parts:
// the overhead the switches measured (the median): its own, else those
// from its node; and says so; with none measured anywhere it says what
// it assumed. i1's disks are shared: no final delta is sent in its
// switch, and nothing is checked. A switch whose driver split out its
// overhead counts that, else its whole downtime, the workload's when that
// was longer.
func TestEstimateDowntimeFromMeasuredSwitches(t *testing.T) {
	e := newEnv(t)
	e.seed()
	estimate := func() (float64, string) {
		est := estimateI1(t, e)
		return est.DowntimeSeconds, est.How
	}
	if down, how := estimate(); down != 0.13 || !strings.Contains(how, "no switch measured yet: 130 ms assumed") {
		t.Fatalf("estimate without history: %g s, %q; want 0.13 s, the stated default", down, how)
	}
	e.exec(`
INSERT INTO migration_phases (migration, seq, instance, phase, node, status, downtime_ms, ended_at) VALUES
  ('m1', 2, 'x1', 'switch', 'node-a1', 'success', 300, now()),
  ('m2', 2, 'x2', 'switch', 'node-a1', 'success', 400, now()),
  ('m3', 2, 'x3', 'switch', 'node-a1', 'success', 900, now()),
  ('m4', 2, 'x4', 'switch', 'node-a2', 'success', 5000, now()),
  ('m5', 2, 'x5', 'switch', 'node-a1', 'error', 7000, now());`)
	down, how := estimate()
	if down != 0.4 || !strings.Contains(how, "overhead: median of the last 3 switches measured from node-a1") ||
		!strings.Contains(how, "400 ms = 400 ms stop and start, no final delta") {
		t.Fatalf("estimate: downtime %g s, %q; want 0.4 s from node-a1's three switches", down, how)
	}
	// The instance's own switches come first, from whichever node: the
	// same runtime and workload as the move to come.
	e.exec(`
INSERT INTO migration_phases (migration, seq, instance, phase, node, status, downtime_ms, ended_at) VALUES
  ('m6', 2, 'i1', 'switch', 'node-a2', 'success', 60, now()),
  ('m7', 2, 'i1', 'switch', 'node-a1', 'error', 9000, now());`)
	down, how = estimate()
	if down != 0.06 || !strings.Contains(how, "median of the last 1 switches of i1") {
		t.Fatalf("estimate: downtime %g s, %q; want 0.06 s from i1's own switch", down, how)
	}
	// Without a split, the workload's downtime when it saw more (a QEMU
	// guest's resume and next write after QEMU's pause).
	e.exec(`UPDATE migration_phases SET workload_downtime_ms = 85 WHERE migration = 'm6'`)
	if down, _ = estimate(); down != 0.085 {
		t.Fatalf("estimate: downtime %g s; want 0.085 s, the workload's figure of i1's switch", down)
	}
	e.exec(`UPDATE migration_phases SET overhead_ms = 30 WHERE migration = 'm6'`)
	if down, _ = estimate(); down != 0.03 {
		t.Fatalf("estimate: downtime %g s; want 0.03 s from i1's switch's overhead", down)
	}
}

// The link's rate is the median of the rates recent sends measured, the
// source node's own first; only the latest progress events count (2,000),
// so an estimate reads a bounded part of however long a log.
func TestEstimateLinkFromRecentRates(t *testing.T) {
	e := newEnv(t)
	e.seed()
	const mib = 1 << 20
	progress := func(n int, node string, bps int64) {
		e.exec(`INSERT INTO event_log (id, topic, partition, "offset", type, version, time, key, payload)
SELECT gen_random_uuid()::text, 'test', 0, 0, 'move.progress', 1, now(), 'k',
       json_build_object('node', $1::text, 'bytes_per_second', $2::bigint)
FROM generate_series(1, $3)`, node, bps, n)
	}
	link := func() (int64, string) {
		est := estimateI1(t, e)
		return est.LinkBytesPerS, est.How
	}
	progress(10, "node-a1", 1*mib)    // i1's node, long ago
	progress(2000, "node-a2", 50*mib) // since: the whole window
	if got, how := link(); got != 50*mib || !strings.Contains(how, "measured on any node (none from node-a1)") {
		t.Fatalf("link %d B/s, %q; want node-a2's 50 MiB/s, node-a1's older rates out of the window", got, how)
	}
	progress(3, "node-a1", 80*mib)
	if got, how := link(); got != 80*mib || !strings.Contains(how, "last 3 rates measured sending from node-a1") {
		t.Fatalf("link %d B/s, %q; want node-a1's own 80 MiB/s", got, how)
	}
}

// estimateI1 asks for instance i1's estimate.
func estimateI1(t *testing.T, e *env) wire.Estimate {
	t.Helper()
	var est wire.Estimate
	code, body := e.do("POST", "/v1/instances/i1/migrate?action=estimate", "")
	if code != 200 || json.Unmarshal(body, &est) != nil {
		t.Fatalf("estimate: %d %s", code, body)
	}
	return est
}

// The dirty rate is a re-sync's bytes over the time since the sync before
// it started (when each took its snapshot), not over that sync's own
// duration: a move that checksummed for 7 s between two syncs did not
// write 40 MiB in the first's 0.2 s.
func TestEstimateDirtyRateBetweenSyncStarts(t *testing.T) {
	e := newEnv(t)
	e.seed()
	const mib = 1 << 20
	sync := func(req string, idx int, bytes int64, started string, seconds float64) {
		e.exec(`INSERT INTO event_log (id, topic, partition, "offset", type, version, time, key, instance, payload)
VALUES (gen_random_uuid()::text, 'test', 0, 0, 'move.progress', 1, now(), 'i1', 'i1',
        json_build_object('request', $1::text, 'index', $2::int, 'phase', 'sync', 'current', $3::bigint,
                          'total', $3::bigint, 'started', $4::text, 'duration_seconds', $5::float8))`,
			req, idx, bytes, started, seconds)
	}
	sync("m1", 1, 1024*mib, "2026-11-29T10:00:00Z", 4)   // the full send
	sync("m1", 2, 40*mib, "2026-11-29T10:00:08Z", 0.2)   // after a checksum ahead: 8 s of writes
	sync("m1", 3, 1*mib, "2026-11-29T10:00:08.2Z", 0.05) // right after: 0.2 s of them
	est := estimateI1(t, e)
	if d := est.DirtyBytesPerS - 5*mib; d < -1 || d > 1 || !strings.Contains(est.How, "measured over 2 re-sync(s)") {
		t.Fatalf("dirty rate %d B/s, %q; want 5 MiB/s over the two re-syncs", est.DirtyBytesPerS, est.How)
	}
}
