package jobs_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/jobs"
	"github.com/drovehq/drove/test/evacsim"
)

const mib = 1 << 20

func node(name string, send, recv int64, memGiB, diskGiB int64) events.NodeAnnounced {
	return events.NodeAnnounced{Name: name, Group: "g1", VMCapable: true,
		Total:              events.Resources{MemoryMiB: memGiB << 10, DiskMiB: diskGiB << 10, CPUs: 64, Spindles: 12},
		SendBytesPerSecond: send, ReceiveBytesPerSecond: recv}
}

func inst(name, on string, diskMiB int64) events.InstanceDeclared {
	return events.InstanceDeclared{Name: name, Owner: "acct", Storage: events.StorageZFSLocal, RunState: events.RunRunning,
		PrimaryNode: on, Size: events.Size{MemoryMiB: 512, VCPUs: 1, DisksMiB: []int64{diskMiB}}}
}

// One huge move and many small ones from one fast node to slow receivers:
// in plan order (the huge one declared last) the small ones go first and
// the huge one runs alone at the end; released longest first, the huge
// one runs from the start while the small ones share the other slots, and
// the evacuation ends within 1.2× of the lower bound.
func TestOrderMattersHugeMoveFirst(t *testing.T) {
	t.Parallel()
	world := []events.Payload{events.GroupDeclared{Name: "g1", AllocPolicy: events.AllocPreferred}}
	world = append(world, node("s", 1000*mib, 1000*mib, 64, 100))
	for i := 1; i <= 10; i++ {
		world = append(world, node(fmt.Sprintf("r%02d", i), 100*mib, 100*mib, 64, 100))
	}
	for i := 0; i < 40; i++ {
		world = append(world, inst(fmt.Sprintf("small%02d", i), "s", 250))
	}
	world = append(world, inst("huge", "s", 10000))

	for _, c := range []struct {
		name       string
		cfg        evacsim.Config
		worst, bad float64
	}{
		{"makespan release, auto", evacsim.Config{World: world, Nodes: []string{"s"}, AutoMovesPerNode: true}, 1.2, 0},
		{"makespan release, 2 per node", evacsim.Config{World: world, Nodes: []string{"s"}}, 1.2, 0},
		{"plan order (before)", evacsim.Config{World: world, Nodes: []string{"s"}, IndexOrder: true}, 0, 1.3},
	} {
		res, err := evacsim.Run(c.cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(res.Violations) > 0 || res.Outcome != "completed" {
			t.Fatalf("%s: outcome %s, broke %v", c.name, res.Outcome, res.Violations)
		}
		ratio := res.Makespan / res.Bound.Seconds
		t.Logf("%s: makespan %.1f s, bound %.1f s (%+v), ratio %.2f", c.name, res.Makespan, res.Bound.Seconds, res.Bound, ratio)
		if c.worst > 0 && ratio > c.worst {
			t.Errorf("%s: ratio %.2f, want at most %.1f", c.name, ratio, c.worst)
		}
		if c.bad > 0 && ratio < c.bad {
			t.Errorf("%s: ratio %.2f; the case should show plan order finishing late (at least %.1f)", c.name, ratio, c.bad)
		}
	}
}

// The release never breaks a rule: on random clusters with random links,
// sizes, caps and failures, every job is released only after its
// dependencies ended as they accept, within the cluster cap and (unless
// auto) the per-node cap; capacity at every step is the plan's
// dependencies' (planner's property test runs those in every order).
// Every run ends, and ends no faster than the lower bound.
func TestReleaseKeepsTheRules(t *testing.T) {
	t.Parallel()
	runs := 60
	if testing.Short() {
		runs = 15
	}
	released, waited := 0, 0
	for seed := 0; seed < runs; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 17))
		speeds := []int64{100 * mib, 400 * mib, 1000 * mib}
		world := []events.Payload{events.GroupDeclared{Name: "g1", AllocPolicy: events.AllocPreferred}}
		nodes := 4 + rng.IntN(8)
		for i := 0; i < nodes; i++ {
			world = append(world, node(fmt.Sprintf("n%02d", i), speeds[rng.IntN(3)], speeds[rng.IntN(3)], int64(8+rng.IntN(24)), int64(50+rng.IntN(200))))
		}
		kinds := []events.StorageKind{events.StorageZFSLocal, events.StorageRBD, events.StorageDRBD}
		for i := 0; i < nodes*3; i++ {
			in := inst(fmt.Sprintf("i%02d", i), fmt.Sprintf("n%02d", rng.IntN(nodes)), int64(1+rng.IntN(20))<<10)
			in.Storage = kinds[rng.IntN(len(kinds))]
			in.Size.MemoryMiB = int64(1+rng.IntN(4)) << 10
			if in.Storage == events.StorageDRBD {
				sec := fmt.Sprintf("n%02d", rng.IntN(nodes))
				if sec == in.PrimaryNode {
					continue
				}
				in.SecondaryNode = sec
			}
			world = append(world, in)
		}
		var evac []string
		for i := 0; i < nodes; i++ {
			if rng.IntN(3) == 0 {
				evac = append(evac, fmt.Sprintf("n%02d", i))
			}
		}
		if len(evac) == 0 {
			evac = []string{"n00"}
		}
		cfg := evacsim.Config{World: world, Nodes: evac, MaxRunningMoves: 1 + rng.IntN(6), MaxMovesPerNode: 1 + rng.IntN(3),
			AutoMovesPerNode: rng.IntN(2) == 0}
		if rng.IntN(3) == 0 {
			cfg.Fail = func(job, index int) bool { return (job*7+index+seed)%5 == 0 }
		}
		res, err := evacsim.Run(cfg)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(res.Violations) > 0 {
			t.Fatalf("seed %d: the release broke rules: %v", seed, res.Violations)
		}
		if cfg.Fail == nil && res.Makespan < res.Bound.Seconds*(1-1e-9) {
			t.Fatalf("seed %d: makespan %.2f s under the lower bound %.2f s", seed, res.Makespan, res.Bound.Seconds)
		}
		released += len(res.Releases)
		if len(res.Releases) > cfg.MaxRunningMoves {
			waited++
		}
	}
	if released == 0 || waited == 0 {
		t.Fatalf("%d jobs released, %d runs where jobs waited for a slot: the random cases check nothing", released, waited)
	}
	t.Logf("%d runs: %d jobs released, %d runs with more jobs than slots", runs, released, waited)
}

// The estimate of a plan is the same release run forward: on the
// order-matters case it expects the huge move's time, and its bound is the
// simulation's.
func TestEstimatePlan(t *testing.T) {
	t.Parallel()
	jobsOf := []events.Job{
		{Index: 0, Opcodes: []events.Opcode{{OpID: events.OpInstanceMigrate, Instance: "a", From: "s", To: "r1"}}},
		{Index: 1, Opcodes: []events.Opcode{{OpID: events.OpInstanceMigrate, Instance: "b", From: "s", To: "r2"}}},
		{Index: 2, Opcodes: []events.Opcode{{OpID: events.OpInstanceMigrate, Instance: "huge", From: "s", To: "r3"}}},
	}
	sizes := map[string]int64{"a": 100, "b": 100, "huge": 1000}
	var ts [][]planner.Transfer
	for i := range jobsOf {
		ts = append(ts, jobs.JobTransfers(&jobsOf[i], func(name string) *events.InstanceDeclared {
			in := inst(name, "s", sizes[name])
			return &in
		}))
	}
	links := func(n string) planner.Link {
		if n == "s" {
			return planner.Link{Send: 1000 * mib, Receive: 1000 * mib}
		}
		return planner.Link{Send: 100 * mib, Receive: 100 * mib}
	}
	est := jobs.EstimatePlan(jobsOf, ts, nil, links, jobs.Limits{Cluster: 5, PerNode: 2})
	// s sends at 1000 MiB/s, receivers take 100: the huge move takes 10 s
	// alone; the two small ones (1 s each) run beside it.
	if est.LowerBound.Seconds != 10 || est.FinishSeconds < 10 || est.FinishSeconds > 10.5 {
		t.Fatalf("estimate %+v; want the bound and the finish at 10 s", est)
	}
}
