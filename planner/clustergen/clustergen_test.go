package clustergen

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/drovehq/drove/planner"
)

// specs are the clusters the property tests check.
func specs() []Spec {
	ganeti := Mix{planner.DRBD: 0.8, planner.Plain: 0.1, planner.RBD: 0.1}
	return []Spec{
		{Seed: 1},
		{Seed: 2, Fill: 0.3, InstancesPerNode: 12},
		{Seed: 3, Groups: 3, NodesPerGroup: 7, Mix: ganeti},
		{Seed: 4, NodesPerGroup: 50, Fill: 0.5, DiskFill: 0.7},
		{Seed: 5, Groups: 1, NodesPerGroup: 2, InstancesPerNode: 3, Fill: 0.4, NodeMemory: Range{64 << 10, 64 << 10}, Mix: Mix{planner.DRBD: 1}},
		{Seed: 6, Mix: Mix{planner.ZFSReplicated: 1, planner.SharedFile: 1}},
	}
}

func generate(t *testing.T, s Spec) *planner.Cluster {
	t.Helper()
	c, err := Generate(s)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", s, err)
	}
	return c
}

func TestGenerateIsDeterministic(t *testing.T) {
	for _, s := range specs() {
		a, b := generate(t, s), generate(t, s)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("seed %d: two clusters from the same spec differ", s.Seed)
		}
	}
	s := specs()[0]
	a := generate(t, s)
	s.Seed++
	if reflect.DeepEqual(a, generate(t, s)) {
		t.Error("seeds 1 and 2 gave the same cluster")
	}
}

func TestGenerateNeverExceedsCapacity(t *testing.T) {
	for _, s := range specs() {
		c := generate(t, s)
		usedCPU := make([]int64, len(c.Nodes))
		for i := range c.Instances {
			usedCPU[c.Instances[i].Primary] += c.Instances[i].VCPUs
		}
		for i := range c.Nodes {
			n := &c.Nodes[i]
			if n.FreeMemory <= 0 || n.FreeMemory > n.TotalMemory-n.ReservedMemory {
				t.Errorf("seed %d: %s free memory %d of %d", s.Seed, n.Name, n.FreeMemory, n.TotalMemory)
			}
			if n.FreeDisk <= 0 || n.FreeDisk > n.TotalDisk {
				t.Errorf("seed %d: %s free disk %d of %d", s.Seed, n.Name, n.FreeDisk, n.TotalDisk)
			}
			limit := int64(c.Groups[n.Group].Policy.VCPURatio*float64(n.TotalCPUs)) - n.ReservedCPUs
			if usedCPU[i] > limit {
				t.Errorf("seed %d: %s runs %d vCPUs, more than the ratio allows (%d)", s.Seed, n.Name, usedCPU[i], limit)
			}
		}
	}
}

func TestGenerateReachesFill(t *testing.T) {
	for _, s := range specs() {
		c := generate(t, s)
		want := s.withDefaults().Fill
		for i := range c.Nodes {
			n := &c.Nodes[i]
			used := n.TotalMemory - n.ReservedMemory - n.FreeMemory
			fill := float64(used) / float64(n.TotalMemory)
			if math.Abs(fill-want) > 0.01 {
				t.Errorf("seed %d: %s filled to %.3f, want %.2f ± 0.01", s.Seed, n.Name, fill, want)
			}
		}
	}
}

func TestGenerateInstancesAreValid(t *testing.T) {
	for _, s := range specs() {
		c := generate(t, s)
		sw := s.withDefaults()
		if got, want := len(c.Instances), sw.Groups*sw.NodesPerGroup*sw.InstancesPerNode; got != want {
			t.Errorf("seed %d: %d instances, want %d", s.Seed, got, want)
		}
		pol := c.Policy.MinMax[0]
		for i := range c.Instances {
			in := &c.Instances[i]
			var sum int64
			for _, d := range in.Disks {
				sum += d.Size
				if d.Size < pol.Min.DiskSize || d.Size > pol.Max.DiskSize {
					t.Errorf("%s: disk of %d MiB outside the policy", in.Name, d.Size)
				}
			}
			if sum != in.DiskSpace || len(in.Disks) == 0 {
				t.Errorf("%s: disks add up to %d MiB, disk space says %d", in.Name, sum, in.DiskSpace)
			}
			if in.Memory < sw.InstanceMemory.Min || in.Memory > sw.InstanceMemory.Max || in.VCPUs < 1 || in.VCPUs > 8 {
				t.Errorf("%s: %d MiB, %d vCPUs out of range", in.Name, in.Memory, in.VCPUs)
			}
			mirrored := in.Storage.Mirroring() == planner.MirroredInternally
			switch {
			case mirrored && (in.Secondary == planner.NoNode || in.Secondary == in.Primary):
				t.Errorf("%s (%s) has secondary %d, primary %d", in.Name, in.Storage, in.Secondary, in.Primary)
			case mirrored && c.Nodes[in.Secondary].Group != c.Nodes[in.Primary].Group:
				t.Errorf("%s has its secondary in another group", in.Name)
			case !mirrored && in.Secondary != planner.NoNode:
				t.Errorf("%s (%s) has a secondary", in.Name, in.Storage)
			}
		}
		if _, _, err := planner.Score(c); err != nil {
			t.Errorf("seed %d: Score: %v", s.Seed, err)
		}
		reqs := []planner.Request{
			EvacuateNodes(c, NodesOfGroup(c, 0, 1), planner.EvacAll),
			EvacuateNodes(c, NodesOfGroup(c, 0, 2), planner.PrimaryOnly),
			EvacuateNodes(c, NodesOfGroup(c, 0, 1), planner.SecondaryOnly),
		}
		if len(c.Groups) > 1 {
			reqs = append(reqs, ChangeGroupRequest(c, 10, s.Seed))
		}
		for _, r := range reqs {
			p, err := planner.Compute(c, r, planner.DefaultOptions())
			if err != nil {
				t.Errorf("seed %d: Compute(%s %s): %v", s.Seed, r.Kind, r.Mode, err)
				continue
			}
			if len(p.Moved)+len(p.Failed) != len(r.Instances) {
				t.Errorf("seed %d: %s: %d moved + %d failed of %d asked", s.Seed, r.Kind, len(p.Moved), len(p.Failed), len(r.Instances))
			}
		}
	}
}

// TestGenerateKeepsNPlusOne checks that secondaries are spread so that
// nodes can still take over their peers' instances at a fill of 0.6.
func TestGenerateKeepsNPlusOne(t *testing.T) {
	for _, s := range specs() {
		c := generate(t, s)
		peers := make([]map[int]int64, len(c.Nodes))
		for i := range peers {
			peers[i] = map[int]int64{}
		}
		for i := range c.Instances {
			in := &c.Instances[i]
			if in.Secondary != planner.NoNode {
				peers[in.Secondary][in.Primary] += in.Memory
			}
		}
		failing := 0
		for i := range c.Nodes {
			var r int64
			for _, m := range peers[i] {
				r = max(r, m)
			}
			if c.Nodes[i].FreeMemory <= r {
				failing++
			}
		}
		if failing*10 > len(c.Nodes) {
			t.Errorf("seed %d: %d of %d nodes fail N+1", s.Seed, failing, len(c.Nodes))
		}
	}
}

func TestGenerateNamesAndPolicy(t *testing.T) {
	c := generate(t, Spec{Seed: 9, Mix: Mix{planner.DRBD: 1, planner.RBD: 1}})
	if c.Nodes[6].Name != "node-g1-007" || c.Nodes[20].Name != "node-g2-001" {
		t.Errorf("node names %q, %q", c.Nodes[6].Name, c.Nodes[20].Name)
	}
	if c.Instances[122].Name != "inst-000123" {
		t.Errorf("instance name %q", c.Instances[122].Name)
	}
	for _, g := range c.Groups {
		if g.AllocPolicy != planner.Preferred || !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(g.UUID) {
			t.Errorf("group %+v", g)
		}
		for _, k := range g.Policy.DiskTemplates {
			if !GanetiKind(k) {
				t.Errorf("group %s allows %q, which hail cannot read", g.Name, k)
			}
		}
	}
	big := generate(t, Spec{Seed: 9, Groups: 1, NodesPerGroup: 1200, InstancesPerNode: 3, NodeMemory: Range{64 << 10, 64 << 10}})
	if big.Nodes[0].Name != "node-g1-0001" {
		t.Errorf("wide node name %q", big.Nodes[0].Name)
	}
}

func TestRecountMatchesGenerate(t *testing.T) {
	c := generate(t, Spec{Seed: 3})
	before := fmt.Sprint(c.Nodes)
	Recount(c)
	if fmt.Sprint(c.Nodes) != before {
		t.Error("Recount changed a freshly generated cluster")
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want []string
	}{
		{"defaults", Spec{}, nil},
		{"fill", Spec{Fill: 1.2}, []string{"fill must be between 0 and 1"}},
		{"unreachable fill", Spec{Fill: 0.8}, []string{"more than 10 instances of at most 16384 MiB"}},
		{"several", Spec{Groups: -1, NodesPerGroup: 1, Mix: Mix{"tape": 1, planner.DRBD: -1}},
			[]string{"groups must be at least 1", "nodes per group must be at least 2", `unknown storage kind "tape"`, "negative weight"}},
		{"empty mix", Spec{Mix: Mix{planner.DRBD: 0}}, []string{"no storage kind"}},
		{"range", Spec{InstanceMemory: Range{4096, 1024}}, []string{"instance memory range [4096, 1024]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("Validate = %v, want ErrInvalidSpec", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if _, gerr := Generate(tc.spec); gerr == nil {
				t.Error("Generate accepted an invalid spec")
			}
		})
	}
}

func TestRequests(t *testing.T) {
	c := generate(t, Spec{Seed: 4})
	node := NodesOfGroup(c, 0, 1)[0]
	ni := c.NodeIndex(node)
	all := EvacuateNodes(c, []string{node, "no-such-node"}, planner.EvacAll)
	pri := EvacuateNodes(c, []string{node}, planner.PrimaryOnly)
	sec := EvacuateNodes(c, []string{node}, planner.SecondaryOnly)
	if len(pri.Instances) != 10 || len(all.Instances) != len(pri.Instances)+len(sec.Instances) {
		t.Errorf("all %d, primary %d, secondary %d", len(all.Instances), len(pri.Instances), len(sec.Instances))
	}
	if len(all.EvacuatedNodes) != 0 || all.Kind != planner.NodeEvacuate || all.Mode != planner.EvacAll {
		t.Errorf("request %+v", all)
	}
	last := -1
	for _, name := range all.Instances {
		i := c.InstanceIndex(name)
		in := &c.Instances[i]
		if i <= last || (in.Primary != ni && in.Secondary != ni) {
			t.Errorf("%s out of order or not on %s", name, node)
		}
		last = i
	}

	cg := ChangeGroupRequest(c, 50, 7)
	if len(cg.Instances) != 50 || len(cg.TargetGroups) != 0 || cg.Kind != planner.ChangeGroup {
		t.Fatalf("change group %+v", cg)
	}
	if !reflect.DeepEqual(cg, ChangeGroupRequest(c, 50, 7)) {
		t.Error("change-group request is not deterministic")
	}
	for _, name := range cg.Instances {
		in := &c.Instances[c.InstanceIndex(name)]
		if c.Nodes[in.Primary].Group != 0 || in.Storage.Mirroring() == planner.NotMirrored || in.Storage.Mirroring() == planner.CopiedOnMove {
			t.Errorf("%s (%s) in group %d", name, in.Storage, c.Nodes[in.Primary].Group)
		}
	}
	if got := len(ChangeGroupRequest(c, 1_000_000, 7).Instances); got >= 1_000_000 || got == 0 {
		t.Errorf("asking for too many gave %d", got)
	}
}
