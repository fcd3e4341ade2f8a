package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor/sim"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/inventory"
)

// The same evacuation through the whole system (-system): the embedded
// broker and Postgres, the projector, the planner service (auto per node,
// 5 per cluster), one executor per node with the sim driver on one shared
// sim.Links, and the gateway, driven over HTTP, with simulated time
// compressed speedup times. It checks the discrete-event simulation on
// the cases small enough to run here; its makespan includes what the
// simulation leaves out (the log's latency, the sim driver's steps).

// systemMakespan evacuates evac from world through the whole system and
// returns the makespan in simulated seconds and the plan the system made
// (its own: the seeded inventory may list instances in another order than
// world, and the plan follows the order).
func systemMakespan(world []events.Payload, evac []string, speedup float64) (float64, *events.PlanComputed, error) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tmp, err := os.MkdirTemp("", "drove-bench-makespan-")
	if err != nil {
		return 0, nil, err
	}
	defer os.RemoveAll(tmp)
	for d := tmp; d != "/" && d != filepath.Dir(os.TempDir()); d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755) // Postgres runs as postgres when we are root
	}
	broker, err := embedded.StartBroker(embedded.Broker{Dir: filepath.Join(tmp, "kafka"), Logger: quiet})
	if err != nil {
		return 0, nil, err
	}
	defer broker.Stop()
	pg, err := embedded.StartPostgres(ctx, embedded.Postgres{Dir: filepath.Join(tmp, "pg")})
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = pg.Stop() }()
	if err := pg.EnsureDatabase(ctx, "drove"); err != nil {
		return 0, nil, err
	}
	inv := inventory.New()
	for _, p := range world {
		inv.Apply(p, inventory.Pos{})
	}
	cluster := inv.Cluster()
	clock := sim.FastClock(speedup)
	cfg := sim.Config{Links: sim.NewLinks(cluster.Links()), Clock: clock, DirtyRate: 1, DiskScale: 1 << 20,
		MemoryScale: 1 << 20, Step: 5 * time.Second, StopTime: time.Millisecond, StartTime: time.Millisecond}
	sys, err := allinone.Start(ctx, allinone.Config{Kafka: kafka.Config{Brokers: broker.Addrs()}, DatabaseURL: pg.URL("drove"), Logger: quiet,
		Seed: func() *planner.Cluster { return cluster }, Sim: cfg, AutoMovesPerNode: true})
	if err != nil {
		return 0, nil, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = sys.Stop(sctx)
	}()
	srv := httptest.NewServer(sys.Handler)
	defer srv.Close()
	api := client.New(srv.URL, "bench")
	if err := waitNodes(ctx, api, len(cluster.Nodes)); err != nil {
		return 0, nil, err
	}
	acc, err := api.Evacuate(ctx, wire.Evacuation{Nodes: evac, Mode: "all", Reason: "makespan bench"})
	if err != nil {
		return 0, nil, err
	}
	start := clock.Now()
	deadline := time.Now().Add(30 * time.Minute)
	for time.Now().Before(deadline) {
		var d struct {
			Status string `json:"status"`
		}
		if err := api.Get(ctx, "/v1/requests/"+acc.Request, &d); err == nil && d.Status == "finished" {
			took := clock.Now().Sub(start).Seconds()
			if os.Getenv("MAKESPAN_TRACE") != "" {
				trace(ctx, api, acc.Request, speedup)
			}
			p, err := api.Plan(ctx, acc.Request)
			if err != nil {
				return 0, nil, err
			}
			return took, &p.PlanComputed, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, nil, fmt.Errorf("request %s did not finish in 30 minutes", acc.Request)
}

// waitNodes waits until the views know every node.
func waitNodes(ctx context.Context, api *client.Client, n int) error {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		var nodes struct {
			Items []struct {
				Name string `json:"name"`
			} `json:"items"`
		}
		if err := api.Get(ctx, fmt.Sprintf("/v1/nodes?limit=%d", n+1), &nodes); err == nil && len(nodes.Items) >= n {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the views did not show the %d nodes in 5 minutes", n)
}

// trace prints each job's release and end, in simulated seconds from the
// first release (MAKESPAN_TRACE set).
func trace(ctx context.Context, api *client.Client, request string, speedup float64) {
	var jobs struct {
		Items []struct {
			Index      int        `json:"index"`
			Instance   string     `json:"instance"`
			ReleasedAt *time.Time `json:"released_at"`
			EndedAt    *time.Time `json:"ended_at"`
			Opcodes    []struct {
				OpID string `json:"op_id"`
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"opcodes"`
		} `json:"items"`
	}
	if err := api.Get(ctx, "/v1/requests/"+request+"/jobs?limit=1000", &jobs); err != nil {
		fmt.Println("trace:", err)
		return
	}
	var t0 time.Time
	for _, j := range jobs.Items {
		if j.ReleasedAt != nil && (t0.IsZero() || j.ReleasedAt.Before(t0)) {
			t0 = *j.ReleasedAt
		}
	}
	for _, j := range jobs.Items {
		if j.ReleasedAt == nil || j.EndedAt == nil {
			continue
		}
		fmt.Printf("job %2d %-12s released %7.0f ended %7.0f (%6.0f s)", j.Index, j.Instance,
			j.ReleasedAt.Sub(t0).Seconds()*speedup, j.EndedAt.Sub(t0).Seconds()*speedup, j.EndedAt.Sub(*j.ReleasedAt).Seconds()*speedup)
		for _, op := range j.Opcodes {
			fmt.Printf(" %s %s→%s", op.OpID, op.From, op.To)
		}
		fmt.Println()
	}
}
