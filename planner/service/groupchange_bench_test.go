package service

import (
	"fmt"
	"log/slog"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/planner/jobs"
)

// BenchmarkGroupChange is the fleet bench's group change (test/bench/fleet,
// measureGroupChange) without Kafka: the cluster the bench seeds, folded
// as the service folds it, then one pass of a dry-run request moving every
// instance of the second group's primaries to any other group, its
// decisions encoded as the producer encodes them. Profile it with
//
//	go test ./planner/service -run '^$' -bench GroupChange/nodes=10000 -benchtime 1x -cpuprofile cpu.out
func BenchmarkGroupChange(b *testing.B) {
	for _, nodes := range []int{2_000, 10_000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			l, names := fleetLoop(b, nodes)
			cpu := cpuTime()
			b.ResetTimer()
			defer func() {
				// The machine is shared: CPU time says what the pass costs
				// when wall time says how busy the neighbours were.
				b.ReportMetric((cpuTime()-cpu).Seconds()/float64(b.N), "cpu-s/op")
			}()
			for range b.N {
				b.StopTimer()
				id := events.NewID()
				env := events.New(events.GroupChangeRequested{Request: id, Instances: names, DryRun: true},
					events.WithReason(events.Reason{Actor: "operator:bench", Why: "bench", RequestID: id}))
				b.StartTimer()
				if d := planOnce(b, l, env, id); d[0].Type != events.TypePlanComputed {
					b.Fatalf("decided %d events, first %v: want a plan", len(d), d[0])
				}
				b.StopTimer()
				closeDryRun(l, id)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkEvacuate is the fleet bench's evacuation (measureEvacuation)
// without Kafka: ten nodes of the first group emptied, all modes.
func BenchmarkEvacuate(b *testing.B) {
	l, _ := fleetLoop(b, 10_000)
	var nodes []string
	for _, n := range l.st.inv.Nodes {
		if n.Group == "g1" && len(nodes) < 10 {
			nodes = append(nodes, n.Name)
		}
	}
	slices.Sort(nodes)
	cpu := cpuTime()
	b.ResetTimer()
	defer func() { b.ReportMetric((cpuTime()-cpu).Seconds()/float64(b.N), "cpu-s/op") }()
	for range b.N {
		b.StopTimer()
		id := events.NewID()
		env := events.New(events.EvacuationRequested{Request: id, Nodes: nodes, Mode: events.EvacAll, DryRun: true},
			events.WithReason(events.Reason{Actor: "operator:bench", Why: "bench", RequestID: id}))
		b.StartTimer()
		planOnce(b, l, env, id)
		b.StopTimer()
		closeDryRun(l, id)
		b.StartTimer()
	}
}

// planOnce folds the request env and runs its pass as the service does,
// encoding what it decides; it fails b unless something was decided.
func planOnce(b *testing.B, l *loop, env events.Envelope, id string) []events.Envelope {
	p, _ := env.DecodePayload()
	l.st.applyDecision(env, p)
	d := decideOne(l, id)
	if len(d.Events) == 0 {
		b.Fatal("nothing decided")
	}
	for _, e := range d.Events {
		if _, err := events.Encode(e); err != nil {
			b.Fatal(err)
		}
	}
	return d.Events
}

// closeDryRun cancels request id, so the next dry run is not refused as
// busy.
func closeDryRun(l *loop, id string) {
	cancel := events.New(events.RequestCancelled{Request: id})
	cp, _ := cancel.DecodePayload()
	l.st.applyDecision(cancel, cp)
	decideOne(l, id)
}

// fleetLoop is a loop whose state folded the fleet bench's cluster of
// nodes nodes (500 a group, 10 primaries each, half full), and the names
// of the second group's primaries.
func fleetLoop(b *testing.B, nodes int) (*loop, []string) {
	b.Helper()
	spec := clustergen.DefaultSpec()
	spec.Groups, spec.NodesPerGroup, spec.InstancesPerNode = nodes/500, 500, 10
	spec.Fill, spec.Seed = 0.5, 2026
	c, err := clustergen.Generate(spec)
	if err != nil {
		b.Fatal(err)
	}
	svc, err := New(Config{Kafka: kafka.Config{Brokers: []string{"127.0.0.1:1"}}, Logger: slog.New(slog.DiscardHandler), MaxRunningMoves: 1000})
	if err != nil {
		b.Fatal(err)
	}
	l := &loop{svc: svc, st: newState(svc.cfg.Clock)}
	for _, e := range InventoryEvents(c, events.Reason{Actor: "bench", Why: "fleet"}) {
		p, _ := e.DecodePayload()
		l.st.applyDecision(e, p)
	}
	var names []string
	for _, in := range c.Instances {
		if c.Nodes[in.Primary].Group == 1 {
			names = append(names, in.Name)
		}
	}
	return l, names
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// decideOne runs request id's pass as decideAll does.
func decideOne(l *loop, id string) jobs.Decision {
	return jobs.Decide(l.jobsEnv(), l.st.reqs, id)
}
