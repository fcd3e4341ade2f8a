package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/drovehq/drove/gateway/wire"
)

// Evacuate a node holding a zfs-local instance, the primary of a
// zfs-replicated one and the replica of another, over HTTP, on real ZFS
// with every instance's workload writing: each dataset ends on its
// planned node with the content the source held when its process stopped
// (the test's own hash, at the stop on the source and at the start on the
// target), no zfs-local dataset is left on the node, each zfs-replicated
// instance's replica on its new secondary holds the primary's snapshot,
// the views show the new placement, and a replay finds every view equal.
func TestZfsEvacuateNode(t *testing.T) {
	z := startZfs(t, nil)
	ctx := context.Background()
	const node = "node-g1-1"
	before := map[string]instance{}
	for _, in := range z.instances(node) {
		before[in.Name] = in
	}
	for _, name := range []string{"local-1", "repl-1", "repl-3"} {
		if _, ok := before[name]; !ok {
			t.Fatalf("%s is not on %s: %v", name, node, names(z.instances(node)))
		}
	}
	t0 := time.Now()
	a, err := z.api.Evacuate(ctx, wire.Evacuation{Nodes: []string{node}, Mode: "all", Reason: "e2e: zfs evacuation"})
	if err != nil {
		t.Fatal(err)
	}
	p := z.finish(a.Request, 4*time.Minute)
	t.Logf("evacuating %s (%d instances) on ZFS took %s", node, len(before), time.Since(t0).Round(time.Millisecond))
	if len(p.Failed) != 0 {
		t.Fatalf("not moved: %+v", p.Failed)
	}
	for _, j := range z.jobs(a.Request) {
		if j.State != "success" {
			t.Errorf("job %d (%s) ended %s %s", j.Index, j.Instance, j.State, j.Error)
		}
	}
	pl := z.plan(a.Request)
	if len(pl.Moved) != len(before) {
		t.Fatalf("the plan moves %d of %d instances", len(pl.Moved), len(before))
	}
	for _, m := range pl.Moved {
		z.waitFor(m.Instance+" placed as planned in the instances view", 30*time.Second, func() bool {
			in := z.instance(m.Instance)
			got := []string{in.Primary}
			if in.Secondary != "" {
				got = append(got, in.Secondary)
			}
			return slices.Equal(got, m.Nodes)
		})
		z.checkPlaced(before[m.Instance], m.Nodes, node)
	}
	if left := z.instances(node); len(left) != 0 {
		t.Errorf("the views still place %v on %s", names(left), node)
	}
	// The old replicas on the node go once the inventory moved them.
	z.waitFor("no dataset left on "+node, time.Minute, func() bool {
		for name := range before {
			if len(z.datasets(node, name)) != 0 {
				return false
			}
		}
		return true
	})
	z.replayEqual()
}

// checkPlaced checks one evacuated instance's data: on its planned
// primary, running, with what the old primary held at its stop (when the
// primary changed) and the generated content intact; its replica (if
// any) on the planned secondary with the primary's latest snapshot.
func (z *zenv) checkPlaced(was instance, nodes []string, evacuated string) {
	z.t.Helper()
	primary := nodes[0]
	if len(z.datasets(primary, was.Name)) == 0 {
		z.t.Errorf("%s: no dataset on its new primary %s", was.Name, primary)
		return
	}
	if !z.running(primary, was.Name) {
		z.t.Errorf("%s: its workload does not run on %s; %s", was.Name, primary, z.whyNotRunning(primary, was.Name))
	}
	if primary != was.Primary {
		z.switchedIntact(was.Name, was.Primary, primary)
	}
	z.baseIntact(primary, was.Name)
	if was.Storage == "zfs-local" {
		if ds := z.datasets(evacuated, was.Name); len(ds) != 0 {
			z.t.Errorf("%s (zfs-local): %v left on %s", was.Name, ds, evacuated)
		}
		return
	}
	if len(nodes) != 2 {
		z.t.Errorf("%s (zfs-replicated): planned on %v, no secondary", was.Name, nodes)
		return
	}
	secondary := nodes[1]
	ps, ss := z.snapshots(primary, was.Name), z.snapshots(secondary, was.Name)
	if len(ss) == 0 || len(ps) == 0 || ss[len(ss)-1] != ps[len(ps)-1] {
		z.t.Errorf("%s: replica on %s holds %v, the primary on %s %v", was.Name, secondary, ss, primary, ps)
		return
	}
	snap := ss[len(ss)-1]
	if got, want := z.snapshotHash(secondary, was.Name, snap), z.snapshotHash(primary, was.Name, snap); got != want {
		z.t.Errorf("%s@%s: the replica on %s hashes %s, the primary on %s %s", was.Name, snap, secondary, got, primary, want)
	}
}
