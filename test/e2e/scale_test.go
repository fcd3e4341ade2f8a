package e2e

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor/sim"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/test/testenv"
)

// A large change-group is planned, appended as a plan in parts (one
// transaction, each part under its bound), run by the nodes' executors on
// the simulated driver, and closed with every instance moved; the views
// join the parts back into one plan.
//
// It moves 400 instances in plans of 32 KiB parts (3 of them) by default,
// which takes under a minute on real Kafka (each opcode's end is a
// transaction of its own); DROVE_E2E_GROUP_CHANGE=20000 moves 20,000 in
// the planner's own part size (about 2 minutes on a loaded 2-core machine
// without the race detector: each executor appends its events one
// transaction at a time). planner/service's TestGroupChangeOf20000Instances
// runs 20,000 through the planner service at every `make test`.
func TestGroupChangeInPartsOnTheSimDriver(t *testing.T) {
	t.Parallel()
	nodes, perNode, partBytes := 10, 40, 32<<10
	if n, err := strconv.Atoi(os.Getenv("DROVE_E2E_GROUP_CHANGE")); err == nil && n >= nodes {
		perNode, partBytes = n/nodes, 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	k := testenv.Kafka(t)
	pg := testenv.Postgres(t)
	seed := clustergen.TwoGroups(nodes, perNode)
	simcfg := allinone.DemoSim()
	simcfg.Clock = sim.InstantClock()
	sys, err := allinone.Start(ctx, allinone.Config{
		Kafka: k.Config(), DatabaseURL: pg.URL, Seed: func() *planner.Cluster { return seed }, Sim: simcfg,
		Logger:          slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		MaxRunningMoves: 200, MaxMovesPerNode: 20, ExecutorConcurrency: 20, PlanPartBytes: partBytes,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sys.Handler)
	t.Cleanup(func() {
		srv.Close()
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		defer scancel()
		if err := sys.Stop(sctx); err != nil {
			t.Errorf("stopping the system: %v", err)
		}
	})
	api := client.New(srv.URL, "e2e")
	var names []string
	for _, in := range seed.Instances {
		names = append(names, in.Name)
	}
	e := &env{t: t}
	e.waitFor("the inventory in the views", 2*time.Minute, func() bool {
		var n int
		return sys.Pool.QueryRow(ctx, `SELECT count(*) FROM drove.instances`).Scan(&n) == nil && n == len(names)
	})
	start := time.Now()
	acc, err := api.ChangeGroup(ctx, wire.GroupChange{Instances: names, TargetGroups: []string{"g2"}, Reason: "rack retirement"})
	if err != nil {
		t.Fatal(truncate(err.Error()))
	}
	kc := k.Config()
	var fin events.RequestFinished
	logged := time.Now()
	e.waitFor("the request to close", 8*time.Minute, func() bool {
		if time.Since(logged) > 15*time.Second {
			logged = time.Now()
			t.Logf("%s: jobs %v", time.Since(start).Round(time.Second), jobStates(t, sys))
		}
		recs, err := kafka.ReadAll(ctx, kc, events.TopicRequests)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Event.CorrelationID != acc.Request {
				continue
			}
			switch r.Event.Type {
			case events.TypeRequestRejected:
				rej, _ := events.As[events.RequestRejected](r.Event)
				t.Fatalf("rejected: %s", truncate(rej.Reason))
			case events.TypeRequestFinished:
				fin, _ = events.As[events.RequestFinished](r.Event)
				return true
			}
		}
		return false
	})
	t.Logf("%d instances changed group in %s", len(fin.Moved), time.Since(start))
	if len(fin.Moved) != nodes*perNode || len(fin.Failed) != 0 {
		t.Fatalf("finished with %d moved, %d failed (first %+v); want all %d moved", len(fin.Moved), len(fin.Failed),
			first(fin.Failed), nodes*perNode)
	}
	plans, err := kafka.ReadAll(ctx, kc, events.TopicPlans)
	if err != nil {
		t.Fatal(err)
	}
	parts := 0
	for _, r := range plans {
		pc, _ := events.As[events.PlanComputed](r.Event)
		if pc.Request == acc.Request {
			parts++
			if pc.Parts < 2 {
				t.Errorf("plan event %d of %d parts; want the plan in parts", pc.Part, pc.Parts)
			}
		}
	}
	t.Logf("the plan took %d events", parts)
	// The views join the parts: the API shows one plan of every job.
	e.waitFor("the plan in the views", time.Minute, func() bool {
		p, err := api.Plan(ctx, acc.Request)
		return err == nil && len(p.Jobs) == nodes*perNode && len(p.Moved) == nodes*perNode
	})
}

func first[T any](s []T) any {
	if len(s) == 0 {
		return nil
	}
	return s[0]
}

// truncate keeps a message about 20,000 instances readable.
func truncate(s string) string {
	if len(s) > 500 {
		return s[:500] + "…"
	}
	return s
}

// jobStates reads the planner's gauge of its active requests' jobs.
func jobStates(t *testing.T, sys *allinone.System) map[string]float64 {
	out := map[string]float64{}
	mfs, err := sys.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "drove_planner_jobs" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}
