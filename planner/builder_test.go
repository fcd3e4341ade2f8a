package planner

import (
	"fmt"
	"testing"
)

// builder makes small clusters for tests. Free memory and disk are derived
// from the placements when the cluster is built, as a node would report
// them.
type builder struct {
	c      Cluster
	groups map[string]int
}

func newBuilder() *builder {
	b := &builder{groups: map[string]int{}}
	b.c.Policy = DefaultIPolicy()
	b.group("g1", Preferred)
	return b
}

func (b *builder) group(name string, p AllocPolicy) *Group {
	b.groups[name] = len(b.c.Groups)
	b.c.Groups = append(b.c.Groups, Group{UUID: "uuid-" + name, Name: name, AllocPolicy: p, Policy: DefaultIPolicy()})
	return &b.c.Groups[len(b.c.Groups)-1]
}

// node adds a node with memory and disk in GiB.
func (b *builder) node(name, group string, memGiB, diskGiB int64) *Node {
	g, ok := b.groups[group]
	if !ok {
		panic("unknown group " + group)
	}
	b.c.Nodes = append(b.c.Nodes, Node{Name: name, Group: g,
		TotalMemory: memGiB * 1024, ReservedMemory: 512, TotalDisk: diskGiB * 1024,
		TotalCPUs: 16, ReservedCPUs: 1, TotalSpindles: 4, FreeSpindles: 4, VMCapable: true})
	return &b.c.Nodes[len(b.c.Nodes)-1]
}

// inst adds a running instance with memory and disk in GiB; sec may be "".
func (b *builder) inst(name string, kind StorageKind, memGiB, diskGiB int64, pri, sec string) *Instance {
	in := Instance{Name: name, Memory: memGiB * 1024, DiskSpace: diskGiB * 1024,
		Disks: []Disk{{Size: diskGiB * 1024}}, VCPUs: 2, SpindleUse: 1, NICs: 1,
		Storage: kind, State: Up, Primary: b.nodeIdx(pri), Secondary: NoNode}
	if sec != "" {
		in.Secondary = b.nodeIdx(sec)
	}
	b.c.Instances = append(b.c.Instances, in)
	return &b.c.Instances[len(b.c.Instances)-1]
}

func (b *builder) nodeIdx(name string) int {
	for i := range b.c.Nodes {
		if b.c.Nodes[i].Name == name {
			return i
		}
	}
	panic("unknown node " + name)
}

func (b *builder) build() *Cluster {
	c := b.c
	c.Nodes = append([]Node(nil), b.c.Nodes...)
	for i := range c.Nodes {
		n := &c.Nodes[i]
		n.FreeMemory = n.TotalMemory - n.ReservedMemory
		n.FreeDisk = n.TotalDisk
	}
	for _, in := range c.Instances {
		if in.State == Up {
			c.Nodes[in.Primary].FreeMemory -= in.Memory
		}
		if in.Storage.UsesLocalDisk() {
			c.Nodes[in.Primary].FreeDisk -= in.DiskSpace
			if in.Secondary != NoNode {
				c.Nodes[in.Secondary].FreeDisk -= in.DiskSpace
			}
		}
	}
	return &c
}

// plan computes a plan and checks the invariants every plan must keep.
func plan(t *testing.T, c *Cluster, r Request, o Options) *Plan {
	t.Helper()
	p, err := Compute(c, r, o)
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	if err := checkPlan(c, r, o, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func moved(p *Plan, name string) *Moved {
	for i := range p.Moved {
		if p.Moved[i].Instance == name {
			return &p.Moved[i]
		}
	}
	return nil
}

func failed(p *Plan, name string) *Failed {
	for i := range p.Failed {
		if p.Failed[i].Instance == name {
			return &p.Failed[i]
		}
	}
	return nil
}

func describe(p *Plan) string {
	s := ""
	for _, m := range p.Moved {
		s += fmt.Sprintf("moved %s -> %s %v\n", m.Instance, m.Group, m.Nodes)
	}
	for _, f := range p.Failed {
		s += fmt.Sprintf("failed %s: %s\n", f.Instance, f.Reason)
	}
	return s
}
