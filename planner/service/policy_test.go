package service

import (
	"reflect"
	"strings"
	"testing"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/iallocator"
)

// A group's instance policy and the nodes' reserved memory travel through
// the inventory events: the folded cluster has them, and plans exactly as
// the cluster they came from, the policy deciding (a tight vCPU ratio
// leaves instances of an evacuation without a node).
func TestPolicyAndReservedMemoryTravelThroughTheLog(t *testing.T) {
	t.Parallel()
	c := testCluster(200)
	c.Groups[0].Policy.VCPURatio = 0.1
	c.Groups[0].Policy.DiskTemplates = []planner.StorageKind{planner.DRBD, planner.Plain}
	c.Groups[0].Policy.MinMax[0].Max.MemorySize = 8192
	for i := range c.Nodes {
		c.Nodes[i].ReservedMemory = 1024
		c.Nodes[i].FreeMemory -= 1024
	}
	got := fold(t, InventoryEvents(c, seedReason)).inv.Cluster()
	if !reflect.DeepEqual(got.Groups[0].Policy, c.Groups[0].Policy) {
		t.Errorf("policy:\n got %+v\nwant %+v", got.Groups[0].Policy, c.Groups[0].Policy)
	}
	if !reflect.DeepEqual(got.Nodes, c.Nodes) {
		t.Errorf("nodes:\n got %+v\nwant %+v", got.Nodes, c.Nodes)
	}
	a, b := evacPlan(t, got), evacPlan(t, c)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the folded cluster plans differently:\n got %+v\nwant %+v", a, b)
	}
	if len(a.Failed) == 0 || !strings.Contains(a.Failed[0].Reason, "vCPU ratio") {
		t.Errorf("want the vCPU ratio to leave instances without a node, got %+v", a.Failed)
	}
}

// drove seed --ganeti imports a Ganeti document's group policies and
// reserved memory too.
func TestGanetiImportKeepsPolicies(t *testing.T) {
	t.Parallel()
	c := testCluster(200)
	c.Groups[0].Policy.VCPURatio = 2.5
	c.Groups[0].Policy.SpindleRatio = 16
	for i := range c.Nodes {
		c.Nodes[i].ReservedMemory = 512
		c.Nodes[i].FreeMemory -= 512
	}
	doc, err := iallocator.EncodeRequest(c, planner.Request{Kind: planner.NodeEvacuate, Mode: planner.EvacAll,
		Instances: evacInstances(c, "n1")})
	if err != nil {
		t.Fatal(err)
	}
	imported, err := iallocator.DecodeCluster(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := fold(t, InventoryEvents(imported, seedReason)).inv.Cluster()
	if p := got.Groups[0].Policy; p.VCPURatio != 2.5 || p.SpindleRatio != 16 {
		t.Errorf("policy ratios %v, %v; want 2.5, 16", p.VCPURatio, p.SpindleRatio)
	}
	for _, n := range got.Nodes {
		if n.ReservedMemory != 512 {
			t.Errorf("%s reserves %d MiB, want 512", n.Name, n.ReservedMemory)
		}
	}
}

// The cluster's tags ride on the groups: migration tags the seed carried
// restrict the folded cluster's plans as they restrict the original's.
func TestClusterTagsTravelThroughTheLog(t *testing.T) {
	t.Parallel()
	c := testCluster(200)
	c.Tags = []string{"htools:migration:hv"}
	for i := range c.Nodes {
		c.Nodes[i].Tags = []string{map[bool]string{true: "hv:a", false: "hv:b"}[i < 2]}
	}
	got := fold(t, InventoryEvents(c, seedReason)).inv.Cluster()
	if !reflect.DeepEqual(got.Tags, c.Tags) {
		t.Fatalf("cluster tags %v, want %v", got.Tags, c.Tags)
	}
	a, b := evacPlan(t, got), evacPlan(t, c)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the folded cluster plans differently:\n got %+v\nwant %+v", a, b)
	}
	untagged := *c
	untagged.Tags = nil
	if reflect.DeepEqual(a.Moved, evacPlan(t, &untagged).Moved) {
		t.Errorf("migration tags changed nothing: %+v", a.Moved)
	}
	for _, m := range a.Moved {
		if c.Instances[c.InstanceIndex(m.Instance)].Primary == 0 && m.Nodes[0] != "n2" {
			t.Errorf("%s migrated from n1 (hv:a) to %s, which does not accept hv:a", m.Instance, m.Nodes[0])
		}
	}
}
