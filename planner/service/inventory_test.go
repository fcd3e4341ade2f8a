package service

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/iallocator"
	"github.com/drovehq/drove/planner/inventory"
)

// fold folds envs into a fresh state, checking on the way that each is an
// event the log would accept.
func fold(t *testing.T, envs []events.Envelope) *state {
	t.Helper()
	st := newState(time.Now)
	for i, e := range envs {
		b, err := events.Encode(e)
		if err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		d, err := events.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := d.DecodePayload()
		st.apply(d, p, inventory.Pos{Time: d.Time, Partition: int32(i % 3), Offset: int64(i)})
	}
	return st
}

var seedReason = events.Reason{Actor: "operator:seed", Why: "import"}

func evacPlan(t *testing.T, c *planner.Cluster) *planner.Plan {
	t.Helper()
	p, err := planner.Compute(c, planner.Request{Kind: planner.NodeEvacuate, Mode: planner.EvacAll,
		Instances: evacInstances(c, "n1"), EvacuatedNodes: []string{"n1"}}, planner.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInventoryRoundTrip(t *testing.T) {
	t.Parallel()
	c := testCluster(200)
	got := fold(t, InventoryEvents(c, seedReason)).inv.Cluster()
	if !reflect.DeepEqual(got.Nodes, c.Nodes) {
		t.Errorf("nodes:\n got %+v\nwant %+v", got.Nodes, c.Nodes)
	}
	if !reflect.DeepEqual(got.Instances, c.Instances) {
		t.Errorf("instances:\n got %+v\nwant %+v", got.Instances, c.Instances)
	}
	if a, b := evacPlan(t, got), evacPlan(t, c); !reflect.DeepEqual(a, b) {
		t.Errorf("the folded cluster plans differently:\n got %+v\nwant %+v", a, b)
	}
}

// A Ganeti cluster imported through its IAllocator document plans the same
// once folded from the log.
func TestGanetiImport(t *testing.T) {
	t.Parallel()
	c := testCluster(200)
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
	if a, b := evacPlan(t, got), evacPlan(t, c); !reflect.DeepEqual(a, b) {
		t.Errorf("the imported cluster plans differently:\n got %+v\nwant %+v", a, b)
	}
}

func TestFreeSpaceFollowsPlacements(t *testing.T) {
	t.Parallel()
	envs := InventoryEvents(testCluster(200), seedReason)
	envs = append(envs, events.New(events.InstancePlaced{Instance: "web1", Group: "g1",
		PrimaryNode: "n2", SecondaryNode: "n4", PreviousGroup: "g1", PreviousPrimary: "n1", PreviousSecondary: "n2"},
		events.WithReason(seedReason), events.WithProducer("test")))
	st := fold(t, envs)
	const mem, disk = 2048, 20 * 1024
	for node, want := range map[string][2]int64{
		"n1": {32*1024 - 3*mem, 200*1024 - 5*disk}, // db's and web2 left, cache replicas stay
		"n2": {32*1024 - mem, 200*1024 - 2*disk},   // web1 now primary here; db2's replica
		"n4": {32*1024 - mem, 200*1024 - 3*disk},   // cache2, db1's replica, web1's new replica
	} {
		m, d := st.inv.FreeOf(node)
		if m != want[0] || d != want[1] {
			t.Errorf("%s free = %d MiB memory, %d MiB disk; want %v", node, m, d, want)
		}
	}
	// The cluster the planner gets (built in one pass over the instances)
	// has the same free space as FreeOf, node by node.
	for _, n := range st.inv.Cluster().Nodes {
		if m, d := st.inv.FreeOf(n.Name); n.FreeMemory != m || n.FreeDisk != d {
			t.Errorf("%s: the cluster has %d/%d MiB free, FreeOf %d/%d", n.Name, n.FreeMemory, n.FreeDisk, m, d)
		}
	}
	// Restating an event changes nothing: whole-state events are idempotent.
	again := fold(t, append(envs, envs...))
	if !reflect.DeepEqual(again.inv.Cluster(), st.inv.Cluster()) {
		t.Error("folding the inventory twice changed it")
	}
}

func TestConfigReportsEveryProblem(t *testing.T) {
	t.Parallel()
	err := Config{MaxRunningMoves: -1, Partitions: -2, Options: planner.Options{MaxMovesPerNode: -1}}.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Validate = %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"Brokers", "MaxRunningMoves", "Partitions", "max moves per node"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not report %s", err, want)
		}
	}
	if _, err := New(Config{Kafka: kafka.Config{Brokers: []string{"k:9092"}}}); err != nil {
		t.Errorf("New with brokers only: %v", err)
	}
}

// The fold's order depends on the log, not on how partitions happened to be
// interleaved when it was read.
func TestFoldOrderIgnoresPartitionInterleaving(t *testing.T) {
	t.Parallel()
	envs := InventoryEvents(testCluster(200), seedReason)
	parts := make([][]int, 3)
	for i, e := range envs {
		p := int(e.Key[len(e.Key)-1]) % 3
		parts[p] = append(parts[p], i)
	}
	foldIn := func(order []int) *planner.Cluster {
		st := newState(time.Now)
		for _, i := range order {
			e := envs[i]
			p, _ := e.DecodePayload()
			st.apply(e, p, inventory.Pos{Time: e.Time, Partition: int32(int(e.Key[len(e.Key)-1]) % 3), Offset: int64(i)})
		}
		return st.inv.Cluster()
	}
	var byPartition, reversed []int
	for p := range parts {
		byPartition = append(byPartition, parts[p]...)
		reversed = append(reversed, parts[len(parts)-1-p]...)
	}
	want := testCluster(200)
	for _, order := range [][]int{byPartition, reversed} {
		if got := foldIn(order); !reflect.DeepEqual(got.Nodes, want.Nodes) || !reflect.DeepEqual(got.Instances, want.Instances) {
			t.Errorf("folding in order %v lost the cluster's order", order)
		}
	}
}

// The planner library classifies storage in its own model (it imports
// nothing of Drove's); the services use events.StorageKind's rules. This
// holds the two equal, kind by kind.
func TestStorageRulesAgreeWithThePlanner(t *testing.T) {
	t.Parallel()
	for _, k := range events.StorageKinds() {
		pk := planner.StorageKind(k)
		if !pk.Known() || !k.Known() {
			t.Errorf("%s: known to events %v, to the planner %v", k, k.Known(), pk.Known())
		}
		m := pk.Mirroring()
		for _, c := range []struct {
			rule          string
			events, plans bool
		}{
			{"internally mirrored", k.InternallyMirrored(), m == planner.MirroredInternally},
			{"shared", k.Shared(), m == planner.MirroredExternally},
			{"copied on move", k.CopiedOnMove(), m == planner.CopiedOnMove},
			{"uses local disk", k.UsesLocalDisk(), pk.UsesLocalDisk()},
		} {
			if c.events != c.plans {
				t.Errorf("%s %s: events says %v, the planner %v", k, c.rule, c.events, c.plans)
			}
		}
	}
	if events.StorageKind("tape").Known() || planner.StorageKind("tape").Known() {
		t.Error("an unknown kind is known")
	}
}
