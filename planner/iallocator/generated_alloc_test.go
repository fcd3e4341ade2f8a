package iallocator_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/planner/iallocator"
)

// allocMix is Ganeti's own kinds only: hail refuses Drove's.
var allocMix = clustergen.Mix{planner.DRBD: 0.6, planner.Plain: 0.2, planner.RBD: 0.2}

// taggedCluster is a generated cluster with location tags (two racks per
// group) and exclusion tags (every third instance runs service "db"), so
// that both tag kinds weigh on the placements.
func taggedCluster(t *testing.T, seed uint64) *planner.Cluster {
	t.Helper()
	c, err := clustergen.Generate(clustergen.Spec{Groups: 2, NodesPerGroup: 6, InstancesPerNode: 4,
		Fill: 0.5, Mix: allocMix, Seed: seed, NodeMemory: clustergen.Range{Min: 32 << 10, Max: 64 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	c.Tags = []string{"htools:nlocation:rack", "htools:iextags:service"}
	for i := range c.Nodes {
		c.Nodes[i].Tags = []string{fmt.Sprintf("rack:g%d-r%d", c.Nodes[i].Group, i%2)}
	}
	for i := range c.Instances {
		if i%3 == 0 {
			c.Instances[i].Tags = []string{"service:db"}
		}
	}
	return c
}

// placedBy applies a tool's answer to a copy of c: the new instances on
// the nodes it chose, or the relocated instance on its new node.
func placedBy(t *testing.T, c *planner.Cluster, r planner.Request, placed map[string][]string) *planner.Cluster {
	t.Helper()
	out := *c
	out.Nodes = slices.Clone(c.Nodes)
	out.Instances = slices.Clone(c.Instances)
	for _, ni := range r.New {
		nodes, ok := placed[ni.Instance.Name]
		if !ok {
			continue
		}
		in := ni.Instance
		in.Primary, in.Secondary = c.NodeIndex(nodes[0]), planner.NoNode
		if len(nodes) > 1 {
			in.Secondary = c.NodeIndex(nodes[1])
		}
		out.Instances = append(out.Instances, in)
	}
	if r.Kind == planner.AllocateSecondary {
		if nodes, ok := placed[r.Instances[0]]; ok {
			in := &out.Instances[c.InstanceIndex(r.Instances[0])]
			in.Storage, in.Secondary = planner.DRBD, c.NodeIndex(nodes[0])
		}
	}
	if r.Kind == planner.Relocate {
		if nodes, ok := placed[r.Instances[0]]; ok {
			in := &out.Instances[c.InstanceIndex(r.Instances[0])]
			if in.Storage.Mirroring() == planner.MirroredInternally {
				in.Secondary = c.NodeIndex(nodes[0])
			} else {
				in.Primary = c.NodeIndex(nodes[0])
			}
		}
	}
	clustergen.Recount(&out)
	return &out
}

// answerOf reads the placements of an allocate, multi-allocate or relocate
// answer, by instance.
func answerOf(t *testing.T, who string, r planner.Request, out []byte) map[string][]string {
	t.Helper()
	var w wireResult
	if err := json.Unmarshal(out, &w); err != nil {
		t.Fatalf("%s: %v: %s", who, err, out)
	}
	placed := map[string][]string{}
	if !w.Success {
		return placed
	}
	switch r.Kind {
	case planner.MultiAllocate:
		// The failed list differs: hail's holds [name, reason] pairs,
		// Drove's the names Ganeti's master accepts.
		var parts [2]json.RawMessage
		var done [][2]json.RawMessage
		if err := json.Unmarshal(w.Result, &parts); err != nil || json.Unmarshal(parts[0], &done) != nil {
			t.Fatalf("%s: %s", who, w.Result)
		}
		for _, a := range done {
			var name string
			var nodes []string
			_ = json.Unmarshal(a[0], &name)
			_ = json.Unmarshal(a[1], &nodes)
			placed[name] = nodes
		}
	case planner.AllocateSecondary:
		var node string
		if err := json.Unmarshal(w.Result, &node); err != nil {
			t.Fatalf("%s: %s", who, w.Result)
		}
		placed[r.Instances[0]] = []string{node}
	default:
		var nodes []string
		if err := json.Unmarshal(w.Result, &nodes); err != nil {
			t.Fatalf("%s: %s", who, w.Result)
		}
		name := r.Instances
		if r.Kind == planner.Allocate {
			name = []string{r.New[0].Instance.Name}
		}
		placed[name[0]] = nodes
	}
	return placed
}

// checkValid holds a placement to the hard limits and the rules: no node
// out of memory or disk, every new instance within its group's policy, no
// two primaries sharing an exclusion tag where the tool placed a new one.
func checkValid(t *testing.T, label string, after *planner.Cluster, r planner.Request, placed map[string][]string) {
	t.Helper()
	for _, n := range after.Nodes {
		if !n.Offline && (n.FreeMemory <= 0 || n.FreeDisk <= 0) {
			t.Errorf("%s: node %s overfilled: %d MiB memory, %d MiB disk free", label, n.Name, n.FreeMemory, n.FreeDisk)
		}
	}
	for _, ni := range r.New {
		nodes, ok := placed[ni.Instance.Name]
		if !ok {
			continue
		}
		pol := after.Groups[after.Nodes[after.NodeIndex(nodes[0])].Group].Policy
		if !slices.Contains(pol.DiskTemplates, ni.Instance.Storage) || ni.Instance.Memory > pol.MinMax[0].Max.MemorySize {
			t.Errorf("%s: %s placed against its group's policy", label, ni.Instance.Name)
		}
		p := after.NodeIndex(nodes[0])
		for _, in := range after.Instances {
			if in.Primary == p && in.Name != ni.Instance.Name && slices.Contains(in.Tags, "service:db") && slices.Contains(ni.Instance.Tags, "service:db") {
				t.Errorf("%s: %s shares primary %s with %s, both tagged service:db", label, ni.Instance.Name, nodes[0], in.Name)
			}
		}
	}
}

// On generated clusters with location and exclusion tags, every allocate,
// multi-allocate, relocate and allocate-secondary answer is valid, succeeds wherever hail's
// does, and leaves a cluster score (all nodes together, hail's measure)
// no worse than hail's.
func TestGeneratedAllocationsNoWorseThanHail(t *testing.T) {
	var cases, same, hailOK, droveOK int
	for seed := uint64(1); seed <= 5; seed++ {
		c := taggedCluster(t, seed)
		var reqs []planner.Request
		for i, ni := range clustergen.NewInstances(4, allocMix, seed) {
			if i%2 == 0 {
				ni.Instance.Tags = []string{"service:db"}
			}
			reqs = append(reqs, planner.Request{Kind: planner.Allocate, New: []planner.NewInstance{ni}})
		}
		reqs = append(reqs, planner.Request{Kind: planner.MultiAllocate, New: clustergen.NewInstances(5, allocMix, seed+100)})
		for k := uint64(0); k < 3; k++ {
			if r, ok := clustergen.RelocateRequest(c, seed*10+k); ok {
				reqs = append(reqs, r)
			}
		}
		plain := 0
		for _, in := range c.Instances {
			if in.Storage == planner.Plain && plain < 2 {
				plain++
				reqs = append(reqs, planner.Request{Kind: planner.AllocateSecondary, Instances: []string{in.Name}})
			}
		}
		for _, r := range reqs {
			cases++
			label := fmt.Sprintf("seed %d %s %v%v", seed, r.Kind, r.Instances, names(r.New))
			doc, err := iallocator.EncodeRequest(c, r)
			if err != nil {
				t.Fatal(err)
			}
			hail := answerOf(t, "hail", r, runHailFlags(t, doc))
			out, err := iallocator.Answer(doc, planner.DefaultOptions())
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			drove := answerOf(t, "drove", r, out)
			hailOK += len(hail)
			droveOK += len(drove)
			if len(drove) < len(hail) {
				t.Errorf("%s: hail placed %v, drove only %v: %s", label, hail, drove, out)
				continue
			}
			afterD := placedBy(t, c, r, drove)
			checkValid(t, label, afterD, r, drove)
			if fmt.Sprint(hail) == fmt.Sprint(drove) {
				same++
				continue
			}
			if len(hail) < len(drove) {
				continue // drove placed more (multi-allocate goes on where hail gives up)
			}
			sd, err := planner.ClusterScore(afterD)
			if err != nil {
				t.Fatal(err)
			}
			sh, err := planner.ClusterScore(placedBy(t, c, r, hail))
			if err != nil {
				t.Fatal(err)
			}
			if sd > sh+1e-9 {
				t.Errorf("%s: drove's score %.8f is worse than hail's %.8f (drove %v, hail %v)", label, sd, sh, drove, hail)
			}
		}
	}
	t.Logf("%d requests: hail placed %d instances, drove %d; %d answers identical to hail's", cases, hailOK, droveOK, same)
	if cases < 30 {
		t.Fatalf("only %d cases", cases)
	}
}

func names(news []planner.NewInstance) string {
	var out []string
	for _, ni := range news {
		out = append(out, ni.Instance.Name)
	}
	return strings.Join(out, ",")
}
