package planner

import (
	"slices"
	"strings"
	"testing"
)

func newOne(name string, kind StorageKind, memGiB int64) NewInstance {
	req := 1
	if kind.Mirroring() == MirroredInternally {
		req = 2
	}
	return NewInstance{RequiredNodes: req, Instance: Instance{Name: name, Memory: memGiB << 10,
		DiskSpace: 20 << 10, Disks: []Disk{{Size: 20 << 10}}, VCPUs: 1, SpindleUse: 1, NICs: 1,
		Storage: kind, State: Up}}
}

// allocPlan computes an allocation and checks what every allocation plan
// keeps: each new instance exactly once, placed or failed with a reason;
// its nodes distinct, online and within one group; no jobs.
func allocPlan(t *testing.T, c *Cluster, r Request, o Options) *Plan {
	t.Helper()
	p, err := Compute(c, r, o)
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	seen := map[string]int{}
	for _, a := range p.Allocated {
		seen[a.Instance]++
		g := -1
		for k, name := range a.Nodes {
			n := c.NodeIndex(name)
			if n < 0 || !c.Nodes[n].Usable() || slices.Index(a.Nodes, name) != k {
				t.Fatalf("%s placed on %v", a.Instance, a.Nodes)
			}
			if g >= 0 && c.Nodes[n].Group != g {
				t.Fatalf("%s spans groups: %v", a.Instance, a.Nodes)
			}
			g = c.Nodes[n].Group
		}
	}
	for _, f := range p.Failed {
		seen[f.Instance]++
		if f.Reason == "" {
			t.Fatalf("%s failed without a reason", f.Instance)
		}
	}
	for _, ni := range r.New {
		if seen[ni.Instance.Name] != 1 {
			t.Fatalf("%s appears %d times:\n%s", ni.Instance.Name, seen[ni.Instance.Name], describeAlloc(p))
		}
	}
	if len(p.Jobs) != 0 {
		t.Fatalf("an allocation made %d jobs", len(p.Jobs))
	}
	return p
}

func describeAlloc(p *Plan) string {
	s := describe(p)
	for _, a := range p.Allocated {
		s += "allocated " + a.Instance + " -> " + a.Group + " " + strings.Join(a.Nodes, ",") + "\n"
	}
	return s + strings.Join(p.Log, "\n")
}

func allocated(p *Plan, name string) *Allocated {
	for i := range p.Allocated {
		if p.Allocated[i].Instance == name {
			return &p.Allocated[i]
		}
	}
	return nil
}

// twoTight is two 48 GiB nodes, one running a 24 GiB plain instance: a
// 26 GiB instance fits on the other, but then neither node's plain
// instance could be recreated on the other.
func twoTight(b *builder) {
	b.c.Nodes, b.c.Instances = nil, nil
	b.node("n1", "g1", 48, 1000)
	b.node("n2", "g1", 48, 1000)
	b.inst("fat", Plain, 24, 20, "n2", "")
}

func TestAllocateRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(b *builder)
		ni    NewInstance
		opts  func(o *Options)
		want  string // nodes joined by ",", or "fail:" and a part of the reason
	}{
		{"a mirrored instance gets two nodes of one group", nil, newOne("x", DRBD, 4), nil, "n1,n4"},
		{"plain goes to the emptiest node", nil, newOne("x", Plain, 4), nil, "n1"},
		{"restricted nodes only", nil, func() NewInstance {
			ni := newOne("x", Plain, 4)
			ni.RestrictToNodes = []string{"n4", "nosuch"}
			return ni
		}(), nil, "n4"},
		{"too big for any node", func(b *builder) {
			b.c.Groups[0].Policy.MinMax[0].Max.MemorySize = 1 << 20
		}, newOne("x", Plain, 70), nil, "fail:not enough memory"},
		{"outside the policy", nil, newOne("x", Plain, 40), nil, "fail:memory 40960 is above the policy maximum 32768"},
		{"storage kind not allowed", func(b *builder) {
			b.c.Groups[0].Policy.DiskTemplates = []StorageKind{DRBD}
		}, newOne("x", Plain, 4), nil, `fail:storage kind "plain" is not allowed`},
		{"a network the group lacks", nil, func() NewInstance {
			ni := newOne("x", Plain, 4)
			ni.Networks = []string{"net-a"}
			return ni
		}(), nil, `fail:not connected to network "net-a"`},
		{"the named group only", func(b *builder) {
			b.group("g2", Preferred)
			b.node("m1", "g2", 64, 1000)
			b.node("m2", "g2", 64, 1000)
		}, func() NewInstance {
			ni := newOne("x", Plain, 4)
			ni.Group = "g2"
			return ni
		}(), nil, "m2"},
		{"an unallocable group is never chosen", func(b *builder) {
			b.group("g2", Unallocable)
			b.node("m1", "g2", 256, 1000)
			b.c.Groups[0].AllocPolicy = LastResort
		}, newOne("x", Plain, 4), nil, "n1"},
		{"a preferred group beats a last-resort one", func(b *builder) {
			b.group("g2", Preferred)
			b.node("m1", "g2", 64, 1000)
			b.node("m2", "g2", 64, 1000)
			b.inst("big", Plain, 24, 20, "m1", "")
			b.c.Groups[0].AllocPolicy = LastResort
		}, newOne("x", Plain, 4), nil, "m2"},
		{"capacity: neither node could be emptied afterwards", twoTight, newOne("x", Plain, 26), nil, "fail:N+1 redundancy"},
		{"capacity checks off", twoTight, newOne("x", Plain, 26), func(o *Options) { o.NoCapacityChecks = true }, "n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			for _, n := range []string{"n1", "n2", "n3", "n4"} {
				b.node(n, "g1", 64, 1000)
			}
			b.inst("i2", Plain, 8, 20, "n2", "")
			b.inst("i3", Plain, 2, 20, "n3", "")
			b.inst("i4", Plain, 16, 20, "n4", "")
			if tc.setup != nil {
				tc.setup(b)
			}
			o := DefaultOptions()
			if tc.opts != nil {
				tc.opts(&o)
			}
			p := allocPlan(t, b.build(), Request{Kind: Allocate, New: []NewInstance{tc.ni}}, o)
			if fail, ok := strings.CutPrefix(tc.want, "fail:"); ok {
				f := failed(p, "x")
				if f == nil || !strings.Contains(f.Reason, fail) {
					t.Fatalf("want x failed with %q:\n%s", fail, describeAlloc(p))
				}
				return
			}
			a := allocated(p, "x")
			if a == nil || strings.Join(a.Nodes, ",") != tc.want {
				t.Fatalf("want x on %s:\n%s", tc.want, describeAlloc(p))
			}
		})
	}
}

// Each instance of a multi-allocate sees the ones placed before it, and
// one that fits nowhere fails alone.
func TestMultiAllocateIsSequential(t *testing.T) {
	b := newBuilder()
	b.node("n1", "g1", 64, 1000)
	b.node("n2", "g1", 64, 1000)
	r := Request{Kind: MultiAllocate, New: []NewInstance{newOne("a", Plain, 20), newOne("b", Plain, 20),
		newOne("huge", Plain, 63), newOne("c", Plain, 20)}}
	o := DefaultOptions()
	o.NoCapacityChecks = true
	p := allocPlan(t, b.build(), r, o)
	on := map[string]int{}
	for _, a := range p.Allocated {
		on[a.Nodes[0]]++
	}
	if len(p.Allocated) != 3 || on["n1"] == 0 || on["n2"] == 0 || failed(p, "huge") == nil {
		t.Fatalf("want a, b, c spread over both nodes and huge failed:\n%s", describeAlloc(p))
	}
}

func TestRelocate(t *testing.T) {
	b := fourNodes()
	b.inst("r", RBD, 2, 20, "n1", "")
	b.inst("p", Plain, 2, 20, "n1", "")
	c := b.build()
	for _, tc := range []struct {
		name string
		r    Request
		want string // the new node, or "fail:" and a part of the reason
	}{
		{"a new secondary", Request{Kind: Relocate, Instances: []string{"i1"}, RelocateFrom: []string{"n2"}, RequiredNodes: 1}, "n4"},
		{"a new primary for shared storage", Request{Kind: Relocate, Instances: []string{"r"}, RelocateFrom: []string{"n1"}, RequiredNodes: 1}, "n4"},
		{"not the secondary", Request{Kind: Relocate, Instances: []string{"i1"}, RelocateFrom: []string{"n1"}, RequiredNodes: 1}, "fail:exactly the instance's secondary [n2]"},
		{"two nodes", Request{Kind: Relocate, Instances: []string{"i1"}, RelocateFrom: []string{"n2"}, RequiredNodes: 2}, "fail:required_nodes must be 1"},
		{"not mirrored", Request{Kind: Relocate, Instances: []string{"p"}, RelocateFrom: []string{"n1"}, RequiredNodes: 1}, "fail:not mirrored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(t, c, tc.r, DefaultOptions())
			if fail, ok := strings.CutPrefix(tc.want, "fail:"); ok {
				if f := failed(p, tc.r.Instances[0]); f == nil || !strings.Contains(f.Reason, fail) || len(p.Relocated) != 0 {
					t.Fatalf("want a failure with %q:\n%s", fail, describe(p))
				}
				return
			}
			if !slices.Equal(p.Relocated, []string{tc.want}) {
				t.Fatalf("want relocated to %s, got %v:\n%s", tc.want, p.Relocated, describe(p))
			}
		})
	}
}

// On a dedicated cluster (exclusive storage everywhere) hail places by
// lost allocations, not by score: the node whose free space the instance
// fits most tightly wins, keeping room for large instances elsewhere.
func TestDedicatedClusterPacksTightly(t *testing.T) {
	b := newBuilder()
	b.node("big", "g1", 64, 1000).ExclusiveStorage = true
	b.node("small", "g1", 64, 1000).ExclusiveStorage = true
	b.inst("filler", Plain, 40, 20, "small", "")
	c := b.build()
	for i := range c.Instances {
		c.Instances[i].Disks[0].Spindles = 1
	}
	ni := newOne("x", Plain, 4)
	ni.Instance.Disks[0].Spindles = 1
	p := allocPlan(t, c, Request{Kind: Allocate, New: []NewInstance{ni}}, DefaultOptions())
	if a := allocated(p, "x"); a == nil || a.Nodes[0] != "small" {
		t.Fatalf("want x packed on small:\n%s", describeAlloc(p))
	}
}

func TestAllocateSecondary(t *testing.T) {
	plan := func(t *testing.T, c *Cluster, r Request, o Options) *Plan {
		t.Helper()
		p, err := Compute(c, r, o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	b := fourNodes()
	b.inst("p", Plain, 4, 20, "n4", "")
	c := b.build()
	p := plan(t, c, Request{Kind: AllocateSecondary, Instances: []string{"p"}}, DefaultOptions())
	if len(p.Relocated) != 1 || p.Relocated[0] == "n4" || len(p.Jobs) != 0 {
		t.Fatalf("want a new secondary for p and no job, got %v:\n%s", p.Relocated, describe(p))
	}
	p = plan(t, c, Request{Kind: AllocateSecondary, Instances: []string{"i1"}}, DefaultOptions())
	if f := failed(p, "i1"); f == nil || !strings.Contains(f.Reason, "already has a secondary node, n2") {
		t.Fatalf("want i1 refused, it has a secondary:\n%s", describe(p))
	}
	tight := DefaultOptions()
	c.Groups[0].Policy.DiskTemplates = []StorageKind{Plain}
	p = plan(t, c, Request{Kind: AllocateSecondary, Instances: []string{"p"}}, tight)
	if f := failed(p, "p"); f == nil || !strings.Contains(f.Reason, `storage kind "drbd" is not allowed`) || p.ScoreAfter != p.ScoreBefore {
		t.Fatalf("want p refused by the policy, the cluster unchanged:\n%s %v -> %v", describe(p), p.ScoreBefore, p.ScoreAfter)
	}
}

// A target a person chose obeys the planner's rules: migration tags, the
// policy's vCPU ratio, memory.
func TestCheckTarget(t *testing.T) {
	b := fourNodes()
	b.inst("r", RBD, 4, 20, "n1", "")
	b.c.Tags = []string{"htools:migration:hv"}
	b.c.Nodes[0].Tags = []string{"hv:new"}
	b.c.Nodes[1].Tags = []string{"hv:old"}
	b.c.Nodes[2].Tags = []string{"hv:new"}
	b.c.Nodes[3].Tags = []string{"hv:new"}
	b.inst("huge", RBD, 60, 20, "n3", "")
	c := b.build()
	for _, tc := range []struct{ inst, node, want string }{
		{"r", "n3", "not enough memory"},
		{"r", "n4", ""},
		{"r", "n2", "n1 has migration tags [hv:new] but n2 accepts only [hv:old]"},
		{"i1", "n2", "migration not allowed"},
		{"i4", "n1", ""},
	} {
		got, err := CheckTarget(c, tc.inst, tc.node, DefaultOptions())
		if err != nil || (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s to %s: %q, %v; want %q", tc.inst, tc.node, got, err, tc.want)
		}
	}
	if _, err := CheckTarget(c, "nope", "n1", DefaultOptions()); err == nil {
		t.Error("an unknown instance is an error")
	}
}
