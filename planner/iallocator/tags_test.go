package iallocator_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/planner/iallocator"
)

// tagCluster builds a one-group cluster for the tag tables: nodes of 64 GiB
// and 1 TiB with the given tags, and plain or mirrored instances.
type tagCluster struct{ c planner.Cluster }

func newTagCluster(clusterTags ...string) *tagCluster {
	pol := ganetiPolicy()
	return &tagCluster{c: planner.Cluster{Name: "tags", Tags: append([]string{}, clusterTags...), Policy: pol,
		Groups: []planner.Group{{UUID: "uuid-g1", Name: "g1", AllocPolicy: planner.Preferred, Policy: pol}}}}
}

// ganetiPolicy is the default policy without Drove's own storage kinds,
// which hail refuses to read.
func ganetiPolicy() planner.IPolicy {
	p := planner.DefaultIPolicy()
	p.DiskTemplates = slices.DeleteFunc(p.DiskTemplates, func(k planner.StorageKind) bool {
		return !clustergen.GanetiKind(k)
	})
	return p
}

func (b *tagCluster) node(name string, tags ...string) {
	b.c.Nodes = append(b.c.Nodes, planner.Node{Name: name, TotalMemory: 64 << 10, ReservedMemory: 1024,
		TotalDisk: 1 << 20, TotalCPUs: 32, ReservedCPUs: 1, TotalSpindles: 4, FreeSpindles: 4,
		VMCapable: true, Tags: append([]string{}, tags...)})
}

func (b *tagCluster) inst(name string, kind planner.StorageKind, memGiB int64, pri, sec string, tags ...string) {
	in := planner.Instance{Name: name, Memory: memGiB << 10, DiskSpace: 20 << 10, Disks: []planner.Disk{{Size: 20 << 10}},
		VCPUs: 1, SpindleUse: 1, NICs: 1, Tags: append([]string{}, tags...), Storage: kind, State: planner.Up,
		Primary: b.c.NodeIndex(pri), Secondary: planner.NoNode}
	if sec != "" {
		in.Secondary = b.c.NodeIndex(sec)
	}
	b.c.Instances = append(b.c.Instances, in)
}

func (b *tagCluster) build() *planner.Cluster {
	c := b.c
	clustergen.Recount(&c)
	return &c
}

// withoutClusterTags drops the cluster tags that start with prefix: the
// same cluster as htools sees it when those tags mean nothing.
func withoutClusterTags(c *planner.Cluster, prefix string) *planner.Cluster {
	out := *c
	out.Tags = nil
	for _, t := range c.Tags {
		if !strings.HasPrefix(t, prefix) {
			out.Tags = append(out.Tags, t)
		}
	}
	return &out
}

func newInst(name string, kind planner.StorageKind, memGiB int64, tags ...string) planner.NewInstance {
	req := 1
	if kind.Mirroring() == planner.MirroredInternally {
		req = 2
	}
	return planner.NewInstance{RequiredNodes: req, Instance: planner.Instance{Name: name, Memory: memGiB << 10,
		DiskSpace: 20 << 10, Disks: []planner.Disk{{Size: 20 << 10}}, VCPUs: 1, SpindleUse: 1, NICs: 1,
		Tags: append([]string{}, tags...), Storage: kind, State: planner.Up}}
}

// placement answers r on c with Drove and with hail and returns, for each,
// the nodes of the instance the request is about (or a failure note).
func placement(t *testing.T, c *planner.Cluster, r planner.Request) (drove, hail string) {
	t.Helper()
	doc, err := iallocator.EncodeRequest(c, r)
	if err != nil {
		t.Fatal(err)
	}
	out, err := iallocator.Answer(doc, planner.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	h := runHailFlags(t, doc)
	if r.Kind == planner.NodeEvacuate {
		_, dr := parseResult(t, "drove", out)
		_, hr := parseResult(t, "hail", h)
		return evacNodes(dr), evacNodes(hr)
	}
	name := r.Instances
	if len(r.New) > 0 {
		name = []string{r.New[0].Instance.Name}
	}
	return fmt.Sprint(answerOf(t, "drove", r, out)[name[0]]), fmt.Sprint(answerOf(t, "hail", r, h)[name[0]])
}

func evacNodes(r evacResult) string {
	if len(r.Moved) == 0 {
		if len(r.Failed) > 0 {
			return "failed: " + r.Failed[0][1]
		}
		return "nothing"
	}
	return fmt.Sprint(r.Moved[0][2])
}

// Location tags: each case is answered by Drove as hail answers it, and
// without the cluster tag that gives the tags their meaning both would
// answer otherwise: the tags decide.
func TestLocationTagsDecideAsInHail(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster func() *planner.Cluster
		req     planner.Request
		prefix  string // the cluster tag prefix the case depends on
		with    string // where the instance goes
		without string // where it goes when the tags mean nothing
	}{
		{
			name: "a mirrored instance spans two racks",
			cluster: func() *planner.Cluster {
				b := newTagCluster("htools:nlocation:rack")
				b.node("n1", "rack:a")
				b.node("n2", "rack:a")
				b.node("n3", "rack:b")
				b.node("n4", "rack:b")
				b.inst("load3", planner.Plain, 16, "n3", "")
				b.inst("load4", planner.Plain, 16, "n4", "")
				return b.build()
			},
			req:     planner.Request{Kind: planner.Allocate, New: []planner.NewInstance{newInst("web", planner.DRBD, 4)}},
			prefix:  "htools:nlocation:",
			with:    "[n2 n4]",
			without: "[n2 n1]",
		},
		{
			name: "instances that exclude each other avoid each other's rack",
			cluster: func() *planner.Cluster {
				b := newTagCluster("htools:nlocation:rack", "htools:iextags:service")
				b.node("n1", "rack:a")
				b.node("n2", "rack:a")
				b.node("n3", "rack:b")
				b.inst("db1", planner.Plain, 4, "n1", "", "service:db")
				b.inst("load2", planner.Plain, 6, "n2", "")
				b.inst("load3", planner.Plain, 8, "n3", "")
				return b.build()
			},
			req:     planner.Request{Kind: planner.Allocate, New: []planner.NewInstance{newInst("db2", planner.Plain, 4, "service:db")}},
			prefix:  "htools:nlocation:",
			with:    "[n3]",
			without: "[n2]",
		},
		{
			name: "a desired location is preferred",
			cluster: func() *planner.Cluster {
				b := newTagCluster("htools:nlocation:power", "htools:desiredlocation:power")
				b.node("n1", "power:a")
				b.node("n2", "power:b")
				b.inst("load1", planner.Plain, 8, "n1", "")
				b.inst("load2", planner.Plain, 6, "n2", "")
				return b.build()
			},
			req:     planner.Request{Kind: planner.Allocate, New: []planner.NewInstance{newInst("app", planner.Plain, 2, "power:a")}},
			prefix:  "htools:desiredlocation:",
			with:    "[n1]",
			without: "[n2]",
		},
		{
			name: "a new secondary goes to the other rack",
			cluster: func() *planner.Cluster {
				b := newTagCluster("htools:nlocation:rack")
				b.node("n1", "rack:a")
				b.node("n2", "rack:b")
				b.node("n3", "rack:a")
				b.node("n4", "rack:b")
				b.inst("db", planner.DRBD, 4, "n1", "n2")
				b.inst("load4", planner.Plain, 8, "n4", "")
				return b.build()
			},
			req:     planner.Request{Kind: planner.Relocate, Instances: []string{"db"}, RelocateFrom: []string{"n2"}, RequiredNodes: 1},
			prefix:  "htools:nlocation:",
			with:    "[n4]",
			without: "[n3]",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cluster()
			drove, hail := placement(t, c, tc.req)
			if drove != tc.with || hail != tc.with {
				t.Errorf("with location tags: drove %s, hail %s, want %s", drove, hail, tc.with)
			}
			drove, hail = placement(t, withoutClusterTags(c, tc.prefix), tc.req)
			if drove != tc.without || hail != tc.without {
				t.Errorf("without them: drove %s, hail %s, want %s", drove, hail, tc.without)
			}
		})
	}
}

// Migration tags: a migration or failover to a node that does not accept
// the source's migration tags is never chosen, and when nothing else is
// left the reason names the tags. Where hail answers the same request,
// it answers the same.
func TestMigrationTagsRestrictMoves(t *testing.T) {
	evacRBD := func(clusterTags ...string) *planner.Cluster {
		b := newTagCluster(clusterTags...)
		b.node("n1", "hv:new")
		b.node("n2", "hv:old")
		b.node("n3", "hv:new")
		b.inst("x", planner.RBD, 4, "n1", "")
		b.inst("load3", planner.Plain, 8, "n3", "")
		return b.build()
	}
	primaryOnly := planner.Request{Kind: planner.NodeEvacuate, Mode: planner.PrimaryOnly, Instances: []string{"x"}}
	for _, tc := range []struct {
		name       string
		cluster    *planner.Cluster
		req        planner.Request
		want       string
		sameAsHail bool
	}{
		{"a shared-storage instance migrates only to a node with its tags", evacRBD("htools:migration:hv"), primaryOnly, "[n3]", true},
		{"without migration tags it goes to the emptiest node", evacRBD(), primaryOnly, "[n2]", true},
		{"allowmigration lets new migrate to old", evacRBD("htools:migration:hv", "htools:allowmigration:hv:new::hv:old"), primaryOnly, "[n2]", true},
		{"an allowmigration tag the other way changes nothing", evacRBD("htools:migration:hv", "htools:allowmigration:hv:old::hv:new"), primaryOnly, "[n3]", true},
		{
			name: "a mirrored instance does not fail over to an incompatible secondary",
			cluster: func() *planner.Cluster {
				b := newTagCluster("htools:migration:hv")
				b.node("n1", "hv:new")
				b.node("n2", "hv:old")
				b.node("n3", "hv:new")
				b.inst("x", planner.DRBD, 4, "n1", "n2")
				return b.build()
			}(),
			req: primaryOnly,
			// Hail refuses the failover and fails the instance; Drove
			// builds a replica on n3 and fails over to it.
			want: "[n3 n1]",
		},
		{
			// The answer says it in hail's words; Drove's reason, naming
			// the tags, is in the plan (Explain, drove iallocator -v).
			name: "with no compatible node the reason is hail's FailMig",
			cluster: func() *planner.Cluster {
				b := newTagCluster("htools:migration:hv")
				b.node("n1", "hv:new")
				b.node("n2", "hv:old")
				b.inst("x", planner.RBD, 4, "n1", "")
				return b.build()
			}(),
			req:        primaryOnly,
			want:       "failed: Can't find any good node:  Node n2 failed: FailMig;",
			sameAsHail: false,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drove, hail := placement(t, tc.cluster, tc.req)
			if drove != tc.want {
				t.Errorf("drove %s, want %s", drove, tc.want)
			}
			if tc.sameAsHail && hail != tc.want {
				t.Errorf("hail %s, want %s", hail, tc.want)
			}
		})
	}
}
