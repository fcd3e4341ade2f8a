package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/gateway/wire"
)

// A node is lost: its executor and workloads stop and the inventory marks
// it offline. Evacuating it over HTTP fails its zfs-replicated instance
// over to the secondary, which starts it from its replica alone (the
// planner's failover with ignore_consistency, run by the secondary's
// executor); its zfs-local instance has no copy elsewhere and is reported
// not moved; the views show the new placement and replay equal.
func TestZfsFailoverFromOfflinePrimary(t *testing.T) {
	z := startZfs(t, nil)
	ctx := context.Background()
	const node = "node-g1-1"
	was := z.instance("repl-1")
	if was.Primary != node || was.Secondary == "" {
		t.Fatalf("repl-1 is %+v, want its primary on %s with a secondary", was, node)
	}
	z.loseNode(ctx, node)
	a, err := z.api.Evacuate(ctx, wire.Evacuation{Nodes: []string{node}, Mode: "primary-only", Reason: "e2e: node lost"})
	if err != nil {
		t.Fatal(err)
	}
	p := z.finish(a.Request, 4*time.Minute)
	failed := map[string]string{}
	for _, f := range p.Failed {
		failed[f.Instance] = f.Reason
	}
	if _, ok := failed["local-1"]; !ok {
		t.Errorf("local-1 (zfs-local, on the lost node) reported moved: %+v", p)
	}
	if why, ok := failed["repl-1"]; ok {
		t.Fatalf("repl-1 not failed over: %s", why)
	}
	var op *events.Opcode
	for _, j := range z.plan(a.Request).Jobs {
		for i := range j.Opcodes {
			if j.Opcodes[i].Instance == "repl-1" {
				op = &j.Opcodes[i]
			}
		}
	}
	if op == nil || op.OpID != events.OpInstanceFailover || !op.IgnoreConsistency || op.To != was.Secondary {
		t.Fatalf("repl-1's opcode %+v, want a failover to %s ignoring consistency", op, was.Secondary)
	}
	z.waitFor("repl-1 on its old secondary in the views", 30*time.Second, func() bool {
		return z.instance("repl-1").Primary == was.Secondary
	})
	if !z.running(was.Secondary, "repl-1") {
		t.Errorf("repl-1's workload does not run on %s after the failover", was.Secondary)
	}
	z.baseIntact(was.Secondary, "repl-1")
	z.replayEqual()
}

// loseNode stops node's executor and workloads and marks it offline in
// the inventory, as an operator would once the node is gone.
func (z *zenv) loseNode(ctx context.Context, node string) {
	z.t.Helper()
	if err := z.sys.StopPart(ctx, "executor/"+node); err != nil {
		z.t.Fatal(err)
	}
	rt, err := z.demo.Runtime(node)
	if err != nil {
		z.t.Fatal(err)
	}
	for _, in := range z.instances(node) {
		if in.Primary == node {
			mnt := z.mountpoint(node, in.Name)
			if err := rt.Stop(ctx, zfs.Instance{Name: in.Name, Node: node, Dataset: z.demo.Dataset(node, in.Name), Mountpoint: mnt}); err != nil {
				z.t.Fatalf("stopping %s on the lost node: %v", in.Name, err)
			}
		}
	}
	var up events.NodeUpdated
	for _, n := range allinone.ZFSCluster(1, 3).Nodes {
		if n.Name == node {
			up = events.NodeUpdated{Name: n.Name, Group: "g1", Offline: true, VMCapable: n.VMCapable,
				Total: events.Resources{MemoryMiB: n.TotalMemory, DiskMiB: n.TotalDisk, CPUs: int(n.TotalCPUs), Spindles: int(n.TotalSpindles)},
				Free:  events.Resources{MemoryMiB: n.FreeMemory, DiskMiB: n.FreeDisk, CPUs: int(n.TotalCPUs), Spindles: int(n.FreeSpindles)}}
		}
	}
	cfg := z.kcfg
	cfg.TransactionalID = "e2e-operator"
	prod, err := kafka.NewProducer(cfg)
	if err != nil {
		z.t.Fatal(err)
	}
	defer prod.Close()
	env := events.New(up, events.WithProducer("e2e"),
		events.WithReason(events.Reason{Actor: "operator:e2e", Why: node + " is lost"}))
	if err := prod.Append(ctx, events.TopicInventory, env); err != nil {
		z.t.Fatal(err)
	}
	z.waitFor(node+" offline in the views", 30*time.Second, func() bool {
		var n struct {
			Offline bool `json:"offline"`
		}
		return z.api.Get(ctx, "/v1/nodes/"+node, &n) == nil && n.Offline
	})
}
