package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/test/bench/cli"
	"github.com/drovehq/drove/test/evacsim"
)

// result is one case as makespan.json records it.
type result struct {
	Name            string  `json:"name"`
	Nodes           int     `json:"nodes"`
	Instances       int     `json:"instances"`
	Evacuated       int     `json:"evacuated"`
	Moves           int     `json:"moves"`
	MakespanS       float64 `json:"makespan_s"`
	LowerBoundS     float64 `json:"lower_bound_s"`
	Ratio           float64 `json:"ratio"`
	FixedRulesS     float64 `json:"fixed_rules_makespan_s"`
	FixedRulesRatio float64 `json:"fixed_rules_ratio"`
	// BoundTerm says which term of the bound binds.
	BoundTerm string `json:"bound_term"`
	// TwoPerNodeRatio is the new release with the fixed cap of 2 per node
	// instead of auto.
	TwoPerNodeRatio float64 `json:"two_per_node_ratio"`
	// With -system (the small cases only): the same evacuation through the
	// whole system, its plan's lower bound and their ratio, and the
	// simulation of that same plan (the system's plan may differ from the
	// simulation's own: it follows the seeded inventory's order).
	SystemMakespanS   float64 `json:"system_makespan_s,omitempty"`
	SystemLowerBoundS float64 `json:"system_lower_bound_s,omitempty"`
	SystemRatio       float64 `json:"system_ratio,omitempty"`
	SystemSimulatedS  float64 `json:"system_plan_simulated_s,omitempty"`
}

type summary struct {
	Method string   `json:"method"`
	Limits string   `json:"limits"`
	Cases  []result `json:"cases"`
	// Sweep is the worst ratio of each case size over more clusters: seeds
	// 1 to -sweep, each with its instances declared in order and reversed
	// (the planner's plan follows the order, so the plans differ).
	Sweep []sweep `json:"sweep"`
}

type sweep struct {
	Evacuated            int     `json:"evacuated"`
	Runs                 int     `json:"runs"`
	WorstRatio           float64 `json:"worst_ratio"`
	MeanRatio            float64 `json:"mean_ratio"`
	WorstFixedRulesRatio float64 `json:"worst_fixed_rules_ratio"`
	MeanFixedRulesRatio  float64 `json:"mean_fixed_rules_ratio"`
}

func main() {
	out := flag.String("out", "test/bench/results/makespan.json", "where the cases go, as JSON")
	seed := flag.Uint64("seed", 1, "the clusters' random seed")
	system := flag.Float64("system", 0, "also run the cases of at most 4 nodes through the whole system (embedded broker, sim driver), simulated time this many times faster than wall time; 0: not")
	only := flag.String("only", "", "run only the cases whose name contains this")
	sweeps := flag.Int("sweep", 6, "also run seeds 1 to this, in order and reversed, and record the worst ratios")
	flag.Parse()
	if err := run(*out, *seed, *system, *only, *sweeps); err != nil {
		fmt.Fprintln(os.Stderr, "makespan:", err)
		os.Exit(1)
	}
}

func run(out string, seed uint64, system float64, only string, sweeps int) error {
	s := summary{
		Method: "discrete-event simulation: planner/jobs.Decide (plan, dependencies, release) with the sim driver's bandwidth model (planner.ShareLinks); see docs/benchmarks.md",
		Limits: "makespan: release for the makespan, auto per node, 5 per cluster; fixed rules: plan order, 2 per node, 5 per cluster",
	}
	world, names, fast, instances := cluster(seed, 100)
	firstOf := func(want bool) []string {
		for _, n := range names {
			if fast[n] == want {
				return []string{n}
			}
		}
		return nil
	}
	for _, c := range []struct {
		name string
		evac []string
	}{
		{"1 node, 1 Gbit/s", firstOf(false)}, {"1 node, 10 Gbit/s", firstOf(true)},
		{"4 nodes", names[:4]}, {"40-node rack", names[:40]},
	} {
		if !strings.Contains(c.name, only) {
			continue
		}
		evac := c.evac
		r := result{Name: c.name, Nodes: len(names), Instances: instances, Evacuated: len(evac)}
		now, err := evacsim.Run(evacsim.Config{World: world, Nodes: evac, AutoMovesPerNode: true})
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		two, err := evacsim.Run(evacsim.Config{World: world, Nodes: evac})
		if err != nil {
			return fmt.Errorf("%s, 2 per node: %w", c.name, err)
		}
		before, err := evacsim.Run(evacsim.Config{World: world, Nodes: evac, IndexOrder: true})
		if err != nil {
			return fmt.Errorf("%s, fixed rules: %w", c.name, err)
		}
		for _, res := range []evacsim.Result{now, two, before} {
			if len(res.Violations) > 0 || res.Outcome != "completed" {
				return fmt.Errorf("%s: outcome %s, rules broken: %v", c.name, res.Outcome, res.Violations)
			}
		}
		b := now.Bound
		r.Moves = len(now.Plan.Jobs)
		r.MakespanS, r.LowerBoundS = round(now.Makespan), round(b.Seconds)
		r.Ratio = round(now.Makespan / b.Seconds)
		r.TwoPerNodeRatio = round(two.Makespan / b.Seconds)
		r.FixedRulesS, r.FixedRulesRatio = round(before.Makespan), round(before.Makespan/b.Seconds)
		switch b.Seconds {
		case b.NodeSeconds:
			r.BoundTerm = "busiest node " + b.Node
		case b.LargestMoveSeconds:
			r.BoundTerm = "largest move"
		default:
			r.BoundTerm = "cluster limit"
		}
		fmt.Printf("%-13s %3d moves: makespan %8.0f s, bound %8.0f s (%s), ratio %.3f; 2 per node %.3f; fixed rules %8.0f s, ratio %.3f\n",
			c.name, r.Moves, r.MakespanS, r.LowerBoundS, r.BoundTerm, r.Ratio, r.TwoPerNodeRatio, r.FixedRulesS, r.FixedRulesRatio)
		if system > 0 && len(evac) <= 4 {
			ms, plan, err := systemMakespan(world, evac, system)
			if err != nil {
				return fmt.Errorf("%s, whole system: %w", c.name, err)
			}
			same, err := evacsim.Run(evacsim.Config{World: world, Nodes: evac, AutoMovesPerNode: true, Plan: plan})
			if err != nil {
				return fmt.Errorf("%s, the system's plan: %w", c.name, err)
			}
			sb := same.Bound.Seconds
			r.SystemMakespanS, r.SystemLowerBoundS, r.SystemRatio = round(ms), round(sb), round(ms/sb)
			r.SystemSimulatedS = round(same.Makespan)
			fmt.Printf("%-13s whole system: makespan %8.0f s, bound %8.0f s, ratio %.3f; its plan simulated %8.0f s, ratio %.3f\n",
				c.name, r.SystemMakespanS, r.SystemLowerBoundS, r.SystemRatio, r.SystemSimulatedS, same.Makespan/sb)
		}
		s.Cases = append(s.Cases, r)
	}
	for _, n := range []int{1, 4, 40} {
		sw, err := sweepRuns(n, sweeps)
		if err != nil {
			return err
		}
		if sw.Runs > 0 {
			fmt.Printf("sweep, %2d nodes, %2d runs: ratio worst %.3f mean %.3f; fixed rules worst %.3f mean %.3f\n",
				n, sw.Runs, sw.WorstRatio, sw.MeanRatio, sw.WorstFixedRulesRatio, sw.MeanFixedRulesRatio)
			s.Sweep = append(s.Sweep, sw)
		}
	}
	return cli.WriteJSON(out, s)
}

func round(x float64) float64 { return math.Round(x*1000) / 1000 }

// cluster is one group of n nodes, a third on 1 Gbit/s links and the
// rest on 10 Gbit/s (one node in eight receives slower than it sends),
// each carrying 6 to 12 instances of mixed sizes: local ZFS disks copied
// on a move (most), live-migrated instances on shared storage (memory
// only), and DRBD pairs. fast says which nodes send at 10 Gbit/s.
func cluster(seed uint64, n int) (world []events.Payload, names []string, fast map[string]bool, instances int) {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	world = []events.Payload{events.GroupDeclared{Name: "g1", AllocPolicy: events.AllocPreferred}}
	const gbit = 125_000_000
	fast = map[string]bool{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("n%03d", i)
		names = append(names, name)
		send := int64(10 * gbit)
		if rng.IntN(3) == 0 {
			send = gbit
		}
		fast[name] = send > gbit
		recv := send
		if rng.IntN(8) == 0 {
			recv = send / 2
		}
		world = append(world, events.NodeAnnounced{Name: name, Group: "g1", VMCapable: true,
			Total:              events.Resources{MemoryMiB: 512 << 10, DiskMiB: 16 << 20, CPUs: 128, Spindles: 24},
			SendBytesPerSecond: send, ReceiveBytesPerSecond: recv})
	}
	disks := []int64{10, 20, 40, 80, 200, 500}
	for i, name := range names {
		for k := 0; k < 6+rng.IntN(7); k++ {
			in := events.InstanceDeclared{Name: fmt.Sprintf("%s-i%02d", name, k), Owner: "acct",
				Storage: events.StorageZFSLocal, RunState: events.RunRunning, PrimaryNode: name,
				Size: events.Size{MemoryMiB: int64(2+rng.IntN(31)) << 10, VCPUs: 2, DisksMiB: []int64{disks[rng.IntN(len(disks))] << 10}}}
			switch rng.IntN(6) {
			case 0:
				in.Storage = events.StorageRBD
			case 1:
				in.Storage = events.StorageDRBD
				in.SecondaryNode = names[(i+1+rng.IntN(n-1))%n]
			}
			world = append(world, in)
			instances++
		}
	}
	return world, names, fast, instances
}

// sweepRuns evacuates the first n nodes of the clusters of seeds 1 to
// seeds, instances in order and reversed.
func sweepRuns(n, seeds int) (sweep, error) {
	sw := sweep{Evacuated: n}
	var sum, sumFixed float64
	for seed := 1; seed <= seeds; seed++ {
		world, names, _, _ := cluster(uint64(seed), 100)
		for _, w := range [][]events.Payload{world, reversed(world)} {
			now, err := evacsim.Run(evacsim.Config{World: w, Nodes: names[:n], AutoMovesPerNode: true})
			if err != nil {
				return sw, err
			}
			before, err := evacsim.Run(evacsim.Config{World: w, Nodes: names[:n], IndexOrder: true})
			if err != nil {
				return sw, err
			}
			if len(now.Violations)+len(before.Violations) > 0 {
				return sw, fmt.Errorf("seed %d, %d nodes: rules broken: %v %v", seed, n, now.Violations, before.Violations)
			}
			r, f := now.Makespan/now.Bound.Seconds, before.Makespan/before.Bound.Seconds
			sw.Runs++
			sum, sumFixed = sum+r, sumFixed+f
			sw.WorstRatio, sw.WorstFixedRulesRatio = max(sw.WorstRatio, round(r)), max(sw.WorstFixedRulesRatio, round(f))
		}
	}
	if sw.Runs > 0 {
		sw.MeanRatio, sw.MeanFixedRulesRatio = round(sum/float64(sw.Runs)), round(sumFixed/float64(sw.Runs))
	}
	return sw, nil
}

// reversed is world with its instances declared in the reverse order.
func reversed(world []events.Payload) []events.Payload {
	var out, insts []events.Payload
	for _, p := range world {
		if _, ok := p.(events.InstanceDeclared); ok {
			insts = append(insts, p)
		} else {
			out = append(out, p)
		}
	}
	slices.Reverse(insts)
	return append(out, insts...)
}
