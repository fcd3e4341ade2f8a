package planner

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// fourNodes is a group of four roomy nodes with one mirrored instance on
// n1/n2 and neighbours on the others, so that no node other than the one
// evacuated looks empty.
func fourNodes() *builder {
	b := newBuilder()
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		b.node(n, "g1", 64, 1000)
	}
	b.inst("i1", DRBD, 4, 40, "n1", "n2")
	b.inst("i2", DRBD, 4, 40, "n3", "n1")
	b.inst("i3", DRBD, 4, 40, "n2", "n3")
	b.inst("i4", DRBD, 4, 40, "n4", "n3")
	return b
}

func TestEvacuateModes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mode      EvacMode
		instances []string
		check     func(t *testing.T, p *Plan)
	}{
		{"all moves both roles off n1", EvacAll, []string{"i1", "i2"}, func(t *testing.T, p *Plan) {
			for _, m := range p.Moved {
				for _, n := range m.Nodes {
					if n == "n1" {
						t.Errorf("%s still on n1: %v", m.Instance, m.Nodes)
					}
				}
			}
			if len(p.Moved) != 2 {
				t.Errorf("want 2 moved:\n%s", describe(p))
			}
		}},
		{"primary-only fails over to the secondary", PrimaryOnly, []string{"i1"}, func(t *testing.T, p *Plan) {
			m := moved(p, "i1")
			if m == nil || !reflect.DeepEqual(m.Nodes, []string{"n2", "n1"}) {
				t.Fatalf("want i1 failed over to n2 keeping n1 as secondary:\n%s", describe(p))
			}
			if ops := p.Jobs[0].Opcodes; len(ops) != 1 || ops[0].Kind != OpMigrate || ops[0].TargetNode != "" {
				t.Errorf("want one plain migrate, got %+v", ops)
			}
		}},
		{"secondary-only replaces the secondary", SecondaryOnly, []string{"i2"}, func(t *testing.T, p *Plan) {
			m := moved(p, "i2")
			if m == nil || m.Nodes[0] != "n3" || m.Nodes[1] == "n1" {
				t.Fatalf("want i2 kept on n3 with a new secondary:\n%s", describe(p))
			}
			if ops := p.Jobs[0].Opcodes; len(ops) != 1 || ops[0].Kind != OpReplaceDisks || ops[0].Mode != ReplaceNewSecondary {
				t.Errorf("want one replace-disks, got %+v", ops)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fourNodes().build()
			p := plan(t, c, Request{Kind: NodeEvacuate, Mode: tc.mode, Instances: tc.instances}, DefaultOptions())
			tc.check(t, p)
		})
	}
}

// Hail, in mode all, excludes every node of every requested instance, so
// in this group (n1 evacuated; i1 also on n2, i2 also on n3) only n4 would
// be left and nothing could move. Drove excludes only n1.
func TestEvacuateAllKeepsOtherNodesOfTheInstancesAsTargets(t *testing.T) {
	c := fourNodes().build()
	p := plan(t, c, Request{Kind: NodeEvacuate, Mode: EvacAll, Instances: []string{"i1", "i2"}}, DefaultOptions())
	if len(p.Failed) != 0 {
		t.Fatalf("want everything moved:\n%s", describe(p))
	}
	if !reflect.DeepEqual(p.EvacuatedNodes, []string{"n1"}) {
		t.Errorf("inferred evacuated nodes %v, want [n1]", p.EvacuatedNodes)
	}
}

// Hail in primary-only mode fails i1 over to n2 even when n2 is being
// evacuated in the same request. Drove gives it a new secondary first and
// fails over to that.
func TestPrimaryOnlyNeverFailsOverOntoAnEvacuatedNode(t *testing.T) {
	c := fourNodes().build()
	r := Request{Kind: NodeEvacuate, Mode: PrimaryOnly, Instances: []string{"i1", "i3"}}
	p := plan(t, c, r, DefaultOptions())
	for _, m := range p.Moved {
		if m.Nodes[0] == "n1" || m.Nodes[0] == "n2" {
			t.Errorf("%s has primary %s, which is being evacuated:\n%s", m.Instance, m.Nodes[0], describe(p))
		}
	}
	if len(p.Moved) != 2 {
		t.Fatalf("want both moved:\n%s", describe(p))
	}
	ops := p.Jobs[0].Opcodes
	if len(ops) != 2 || ops[0].Kind != OpReplaceDisks || ops[1].Kind != OpMigrate {
		t.Errorf("want replace-disks then migrate for i1, got %+v", ops)
	}
}

func TestStorageKinds(t *testing.T) {
	for _, tc := range []struct {
		kind      StorageKind
		mode      EvacMode
		wantMoved bool
		wantOp    OpKind
		reason    string
	}{
		{Plain, EvacAll, false, "", "not mirrored"},
		{File, PrimaryOnly, false, "", "not mirrored"},
		{RBD, EvacAll, true, OpMigrate, ""},
		{SharedFile, PrimaryOnly, true, OpMigrate, ""},
		{Ext, SecondaryOnly, false, "", "no secondary"},
		{ZFSLocal, EvacAll, true, OpMigrate, ""},
		{ZFSReplicated, PrimaryOnly, true, OpMigrate, ""},
		{Diskless, EvacAll, true, OpMigrate, ""},
	} {
		t.Run(string(tc.kind)+"/"+string(tc.mode), func(t *testing.T) {
			b := fourNodes()
			sec := ""
			if tc.kind.Mirroring() == MirroredInternally {
				sec = "n3"
			}
			b.inst("x", tc.kind, 2, 20, "n1", sec)
			c := b.build()
			p := plan(t, c, Request{Kind: NodeEvacuate, Mode: tc.mode, Instances: []string{"x"}, EvacuatedNodes: []string{"n1"}}, DefaultOptions())
			if tc.wantMoved {
				if moved(p, "x") == nil {
					t.Fatalf("want x moved:\n%s", describe(p))
				}
				if op := p.Jobs[0].Opcodes[0]; op.Kind != tc.wantOp {
					t.Errorf("want %s, got %+v", tc.wantOp, op)
				}
				return
			}
			f := failed(p, "x")
			if f == nil || !strings.Contains(f.Reason, tc.reason) {
				t.Fatalf("want x failed with %q:\n%s", tc.reason, describe(p))
			}
		})
	}
}

func TestSharedStorageMigratesToAChosenNode(t *testing.T) {
	b := fourNodes()
	b.inst("x", RBD, 2, 20, "n1", "")
	c := b.build()
	p := plan(t, c, Request{Kind: NodeEvacuate, Mode: EvacAll, Instances: []string{"x"}, EvacuatedNodes: []string{"n1"}}, DefaultOptions())
	op := p.Jobs[0].Opcodes[0]
	if op.TargetNode == "" || op.TargetNode == "n1" || !op.AllowFailover {
		t.Errorf("want a migrate to a named node other than n1, got %+v", op)
	}
}

func TestCopiedStorageNeedsDiskOnTheTarget(t *testing.T) {
	b := newBuilder()
	b.node("n1", "g1", 64, 1000)
	b.node("small", "g1", 64, 10)
	b.node("big", "g1", 64, 1000)
	b.inst("x", ZFSLocal, 2, 100, "n1", "")
	c := b.build()
	p := plan(t, c, Request{Kind: NodeEvacuate, Mode: EvacAll, Instances: []string{"x"}}, DefaultOptions())
	if m := moved(p, "x"); m == nil || m.Nodes[0] != "big" {
		t.Fatalf("want x on big, the only node with disk room:\n%s", describe(p))
	}
}

func TestFailureReasonsNameTheResourceAndNodes(t *testing.T) {
	b := newBuilder()
	b.node("n1", "g1", 64, 1000)
	b.node("n2", "g1", 8, 1000)
	b.node("n3", "g1", 8, 1000)
	b.inst("big", RBD, 32, 10, "n1", "")
	c := b.build()
	p := plan(t, c, Request{Kind: NodeEvacuate, Mode: EvacAll, Instances: []string{"big"}}, DefaultOptions())
	f := failed(p, "big")
	if f == nil {
		t.Fatalf("want big failed:\n%s", describe(p))
	}
	for _, want := range []string{"not enough memory", "n2", "n3", "MiB free", "needs 32768 MiB", `group "g1"`} {
		if !strings.Contains(f.Reason, want) {
			t.Errorf("reason %q does not say %q", f.Reason, want)
		}
	}
}

func TestNodesThatMustNotReceive(t *testing.T) {
	for _, tc := range []struct {
		name string
		mark func(n *Node)
	}{
		{"offline", func(n *Node) { n.Offline = true }},
		{"drained", func(n *Node) { n.Drained = true }},
		{"not vm-capable", func(n *Node) { n.VMCapable = false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			b.node("n1", "g1", 64, 1000)
			tc.mark(b.node("bad", "g1", 256, 4000))
			b.node("ok", "g1", 64, 1000)
			b.inst("x", RBD, 2, 10, "n1", "")
			c := b.build()
			p := plan(t, c, Request{Kind: NodeEvacuate, Mode: EvacAll, Instances: []string{"x"}}, DefaultOptions())
			if m := moved(p, "x"); m == nil || m.Nodes[0] != "ok" {
				t.Fatalf("want x on ok:\n%s", describe(p))
			}
		})
	}
}

func TestSoftConstraints(t *testing.T) {
	// Every candidate but "free" breaks one soft rule; with
	// IgnoreSoftErrors any may be used.
	for _, tc := range []struct {
		name   string
		setup  func(b *builder)
		reason string
	}{
		{"exclusion tags", func(b *builder) {
			b.c.Tags = []string{ExclusionTagPrefix + "svc"}
			b.inst("web1", RBD, 1, 1, "blocked", "").Tags = []string{"svc:web"}
			b.inst("x", RBD, 2, 10, "n1", "").Tags = []string{"svc:web"}
		}, "exclusion tag conflict"},
		{"vcpu ratio", func(b *builder) {
			b.inst("hog", RBD, 1, 1, "blocked", "").VCPUs = 62 // 63 of 16*4 vCPUs
			b.inst("x", RBD, 2, 10, "n1", "")
		}, "vCPU ratio limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			b.node("n1", "g1", 64, 1000)
			b.node("blocked", "g1", 256, 4000)
			tc.setup(b)
			c := b.build()
			r := Request{Kind: NodeEvacuate, Mode: EvacAll, Instances: []string{"x"}, EvacuatedNodes: []string{"n1"}}
			p := plan(t, c, r, DefaultOptions())
			f := failed(p, "x")
			if f == nil || !strings.Contains(f.Reason, tc.reason) || !strings.Contains(f.Reason, "blocked") {
				t.Fatalf("want x failed with %q on blocked:\n%s", tc.reason, describe(p))
			}
			o := DefaultOptions()
			o.IgnoreSoftErrors = true
			p = plan(t, c, r, o)
			if m := moved(p, "x"); m == nil || m.Nodes[0] != "blocked" {
				t.Fatalf("with soft errors ignored, want x on blocked:\n%s", describe(p))
			}
		})
	}
}

func TestRedundancyIsNotBrokenByANewSecondary(t *testing.T) {
	// n3 has 20 GiB free; as secondary of two 12 GiB instances whose
	// primary is n2 it would have to absorb 24 GiB if n2 failed.
	b := newBuilder()
	b.node("n1", "g1", 64, 1000)
	b.node("n2", "g1", 64, 1000)
	b.node("n3", "g1", 21, 1000)
	b.node("n4", "g1", 64, 1000)
	b.inst("a", DRBD, 12, 10, "n2", "n3")
	b.inst("x", DRBD, 12, 10, "n2", "n1")
	b.inst("filler", DRBD, 1, 10, "n4", "n1")
	c := b.build()
	p := plan(t, c, Request{Kind: NodeEvacuate, Mode: SecondaryOnly, Instances: []string{"x", "filler"}}, DefaultOptions())
	if m := moved(p, "x"); m == nil || m.Nodes[1] != "n4" {
		t.Fatalf("want x's new secondary on n4, not n3:\n%s", describe(p))
	}
}

func TestChangeGroupPolicies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  [2]AllocPolicy // of g2 and g3
		g2Mem   int64
		targets []string
		want    string // group, or "" for failed
	}{
		{"preferred first", [2]AllocPolicy{Preferred, Preferred}, 64, nil, "g2"},
		{"last resort only when no preferred fits", [2]AllocPolicy{Preferred, LastResort}, 2, nil, "g3"},
		{"preferred beats a roomier last resort", [2]AllocPolicy{LastResort, Preferred}, 64, nil, "g3"},
		{"unallocable never", [2]AllocPolicy{Unallocable, Unallocable}, 64, nil, ""},
		{"only the named targets", [2]AllocPolicy{Preferred, Preferred}, 64, []string{"g3"}, "g3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fourNodes()
			b.group("g2", tc.policy[0])
			b.group("g3", tc.policy[1])
			for _, n := range []string{"a1", "a2", "a3"} {
				b.node(n, "g2", tc.g2Mem, 1000)
			}
			for _, n := range []string{"b1", "b2", "b3"} {
				b.node(n, "g3", 32, 1000)
			}
			c := b.build()
			p := plan(t, c, Request{Kind: ChangeGroup, Instances: []string{"i1"}, TargetGroups: tc.targets}, DefaultOptions())
			m := moved(p, "i1")
			if tc.want == "" {
				if m != nil || !strings.Contains(failed(p, "i1").Reason, "unallocable") {
					t.Fatalf("want i1 failed because of unallocable groups:\n%s", describe(p))
				}
				return
			}
			if m == nil || m.Group != tc.want {
				t.Fatalf("want i1 in %s:\n%s", tc.want, describe(p))
			}
			ops := p.Jobs[0].Opcodes
			if len(ops) != 3 || ops[0].Kind != OpReplaceDisks || ops[1].Kind != OpMigrate || ops[2].Kind != OpReplaceDisks {
				t.Errorf("want replace, migrate, replace; got %+v", ops)
			}
		})
	}
}

func TestChangeGroupInstancePolicy(t *testing.T) {
	b := fourNodes()
	g := b.group("g2", Preferred)
	g.Policy.MinMax[0].Max.MemorySize = 2048
	for _, n := range []string{"a1", "a2"} {
		b.node(n, "g2", 64, 1000)
	}
	c := b.build()
	p := plan(t, c, Request{Kind: ChangeGroup, Instances: []string{"i1"}}, DefaultOptions())
	f := failed(p, "i1")
	if f == nil || !strings.Contains(f.Reason, "memory-size 4096 is above the maximum 2048") {
		t.Fatalf("want a policy failure naming memory-size:\n%s", describe(p))
	}
}

// Hail refuses every change-group move when the cluster already lacks N+1
// redundancy somewhere. Drove refuses only moves that break it.
func TestChangeGroupDespiteExistingRedundancyLoss(t *testing.T) {
	b := fourNodes()
	b.node("tight", "g1", 6, 1000)
	b.inst("t1", DRBD, 3, 10, "n4", "tight")
	b.inst("t2", DRBD, 3, 10, "n4", "tight") // tight cannot absorb n4's failure
	b.group("g2", Preferred)
	for _, n := range []string{"a1", "a2", "a3"} {
		b.node(n, "g2", 64, 1000)
	}
	c := b.build()
	s, _ := newState(c, DefaultOptions())
	if !s.nodes[c.NodeIndex("tight")].failN1 {
		t.Fatal("test setup: tight should already fail N+1")
	}
	p := plan(t, c, Request{Kind: ChangeGroup, Instances: []string{"i1", "i2"}}, DefaultOptions())
	if len(p.Moved) != 2 {
		t.Fatalf("want both moved:\n%s", describe(p))
	}
}

func TestRequestErrors(t *testing.T) {
	c := fourNodes().build()
	for _, tc := range []struct {
		r    Request
		want error
		msg  string
	}{
		{Request{Kind: "teleport", Instances: []string{"i1"}}, ErrBadRequest, "request type"},
		{Request{Kind: Allocate}, ErrBadRequest, "exactly one"},
		{Request{Kind: Relocate, Instances: []string{"i1"}, RelocateFrom: []string{"zz"}}, ErrUnknownNode, `"zz"`},
		{Request{Kind: NodeEvacuate, Mode: "sideways", Instances: []string{"i1"}}, ErrBadRequest, "evac_mode"},
		{Request{Kind: NodeEvacuate, Mode: EvacAll, Instances: []string{"nope"}}, ErrUnknownInstance, `"nope"`},
		{Request{Kind: NodeEvacuate, Mode: EvacAll, Instances: []string{"i1", "i1"}}, ErrBadRequest, "twice"},
		{Request{Kind: NodeEvacuate, Mode: EvacAll, Instances: []string{"i1"}, EvacuatedNodes: []string{"zz"}}, ErrUnknownNode, `"zz"`},
		{Request{Kind: ChangeGroup, Instances: []string{"i1"}, TargetGroups: []string{"nowhere"}}, ErrUnknownGroup, `"nowhere"`},
	} {
		_, err := Compute(c, tc.r, DefaultOptions())
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: got %v, want %v mentioning %s", tc.r, err, tc.want, tc.msg)
		}
	}
	bad := DefaultOptions()
	bad.MaxMovesPerNode = 0
	if _, err := Compute(c, Request{Kind: NodeEvacuate, Mode: EvacAll, Instances: []string{"i1"}}, bad); !errors.Is(err, ErrBadRequest) {
		t.Errorf("zero max moves: got %v", err)
	}
}

func TestInconsistentSnapshots(t *testing.T) {
	b := fourNodes()
	b.inst("broken", DRBD, 1, 1, "n1", "")
	_, err := Compute(b.build(), Request{Kind: NodeEvacuate, Mode: EvacAll, Instances: []string{"i1"}}, DefaultOptions())
	if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), `"broken"`) {
		t.Fatalf("got %v", err)
	}
}

func TestDeterministic(t *testing.T) {
	c := fourNodes().build()
	r := Request{Kind: NodeEvacuate, Mode: EvacAll, Instances: []string{"i1", "i2"}}
	first := plan(t, c, r, DefaultOptions())
	for i := 0; i < 5; i++ {
		if again := plan(t, c, r, DefaultOptions()); !reflect.DeepEqual(first, again) {
			t.Fatalf("plans differ:\n%s\n%s", describe(first), describe(again))
		}
	}
}
