package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/gateway"
	"github.com/drovehq/drove/gateway/wire"
)

// dryRunPlan writes request id (a dry run or not) and its plan of jobs
// to the views, as the planner and projector would.
func (e *env) dryRunPlan(id string, dry bool, jobs string) {
	e.t.Helper()
	e.exec(`INSERT INTO requests (id, kind, nodes, mode, dry_run, requested_at, planned_at, plans)
  VALUES ($1, 'evacuation', '{node-a1}', 'all', $2, now(), now(), 1)`, id, dry)
	e.exec(`INSERT INTO plans (request, moved, failed, jobs, score_before, score_after, computed_at)
  VALUES ($1, '[]', '[]', $2, 1, 1, now())`, id, jobs)
}

// A dry run's plan carries each move's predicted downtime, computed as
// the estimate computes it: z1's migration is predicted what
// action=estimate predicts for z1, in its words; i1's failover off
// node-a1 costs the overhead node-a1's switches measured and sends no
// delta (drbd); its replace-disks stops nothing. A plan that is no dry
// run carries none.
func TestDryRunPlanPredictsEachMove(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.instanceRow("z1", "acct-1", nil)
	e.exec(`
INSERT INTO migration_phases (migration, seq, instance, phase, node, status, downtime_ms, ended_at) VALUES
  ('m1', 2, 'x1', 'switch', 'node-a1', 'success', 300, now()),
  ('m2', 2, 'x2', 'switch', 'node-a2', 'success', 900, now());`)
	const jobs = `[{"index":0,"opcodes":[{"op_id":"OP_INSTANCE_MIGRATE","instance":"z1","from":"node-a1","to":"node-a2"}]},
 {"index":1,"opcodes":[{"op_id":"OP_INSTANCE_FAILOVER","instance":"i1","from":"node-a1","to":"node-a2"},
   {"op_id":"OP_INSTANCE_REPLACE_DISKS","instance":"i1","mode":"replace_new_secondary","remote_node":"node-b1","from":"node-a2","to":"node-b1"}]}]`
	e.dryRunPlan("r-dry", true, jobs)
	e.dryRunPlan("r-wet", false, jobs)

	var p wire.PlanRow
	e.get("/v1/requests/r-dry/plan", &p)
	if len(p.Moves) != 3 {
		t.Fatalf("%d moves predicted, want 3: %+v", len(p.Moves), p.Moves)
	}
	est := estimateOf(t, e, "z1")
	z1, fo, rd := p.Moves[0], p.Moves[1], p.Moves[2]
	if z1.Instance != "z1" || z1.Job != 0 || z1.OpID != "OP_INSTANCE_MIGRATE" || z1.From != "node-a1" || z1.To != "node-a2" ||
		z1.PredictedDowntimeMS != int64(math.Round(est.DowntimeSeconds*1000)) || z1.Downtime != est.Downtime || z1.How != est.How {
		t.Fatalf("z1's move %+v;\nwant the estimate's %g s, %+v, %q", z1, est.DowntimeSeconds, est.Downtime, est.How)
	}
	if fo.Job != 1 || fo.Index != 0 || fo.PredictedDowntimeMS != 300 || fo.Downtime.TransferMS != 0 ||
		!strings.Contains(fo.How, "downtime: 300 ms = 300 ms stop and start, no final delta") ||
		!strings.Contains(fo.How, "overhead: median of the last 1 switches measured from node-a1") {
		t.Fatalf("i1's failover %+v; want node-a1's 300 ms, no delta", fo)
	}
	if rd.Index != 1 || rd.PredictedDowntimeMS != 0 || !strings.Contains(rd.How, "no downtime: replace-disks") {
		t.Fatalf("i1's replace-disks %+v; want no downtime", rd)
	}

	var wet wire.PlanRow
	if e.get("/v1/requests/r-wet/plan", &wet); wet.Moves != nil {
		t.Fatalf("a plan that is no dry run carries %d predictions", len(wet.Moves))
	}
}

// estimateOf asks for an instance's estimate.
func estimateOf(t *testing.T, e *env, name string) wire.Estimate {
	t.Helper()
	var est wire.Estimate
	code, body := e.do("POST", "/v1/instances/"+name+"/migrate?action=estimate", "")
	if code != 200 || json.Unmarshal(body, &est) != nil {
		t.Fatalf("estimate: %d %s", code, body)
	}
	return est
}

// queryCounter counts the queries a pool sends.
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	return ctx
}

func (q *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// The predictions of a plan are read in the same few queries whatever
// its size: a plan of 3,000 moves (each instance with its own switch
// history, which the prediction reads) costs the queries of a plan of 3.
func TestDryRunPlanPredictionsAreBatched(t *testing.T) {
	e := newEnv(t)
	e.seed()
	counter := &queryCounter{}
	pc := e.pool.Config().Copy()
	pc.ConnConfig.Tracer = counter
	traced, err := pgxpool.NewWithConfig(e.ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(traced.Close)
	g, err := gateway.New(e.cfg, traced, e.prod)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(g.Handler())
	t.Cleanup(e.srv.Close)

	queries := func(id string, moves int) int64 {
		t.Helper()
		e.exec(`INSERT INTO instances (name, owner, memory_mib, vcpus, disk_mib, storage, run_state, group_name, primary_node, updated_at)
  SELECT $1 || '-' || i, 'acct-1', 1024, 1, 2048, 'zfs-local', 'running', 'g1', 'node-a1', now() FROM generate_series(1, $2) i`, id, moves)
		e.exec(`INSERT INTO migration_phases (migration, seq, instance, phase, node, status, downtime_ms, ended_at)
  SELECT $1 || '-m' || i, 2, $1 || '-' || i, 'switch', 'node-a1', 'success', 100 + i % 7, now() FROM generate_series(1, $2) i`, id, moves)
		var jobs []string
		for i := 1; i <= moves; i++ {
			jobs = append(jobs, fmt.Sprintf(`{"index":%d,"opcodes":[{"op_id":"OP_INSTANCE_MIGRATE","instance":"%s-%d","from":"node-a1","to":"node-a2"}]}`, i-1, id, i))
		}
		e.dryRunPlan(id, true, "["+strings.Join(jobs, ",")+"]")
		before := counter.n.Load()
		var p wire.PlanRow
		e.get("/v1/requests/"+id+"/plan", &p)
		if len(p.Moves) != moves || !strings.Contains(p.Moves[moves-1].How, fmt.Sprintf("median of the last 1 switches of %s-%d", id, moves)) {
			t.Fatalf("%d moves predicted, want %d, the last from its own switch: %+v", len(p.Moves), moves, p.Moves[len(p.Moves)-1])
		}
		return counter.n.Load() - before
	}
	small, large := queries("small", 3), queries("large", 3000)
	if small != large || large > 10 {
		t.Fatalf("a plan of 3 moves took %d queries, one of 3,000 %d; want the same few", small, large)
	}
}
