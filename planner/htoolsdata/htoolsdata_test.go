package htoolsdata

import (
	"reflect"
	"strings"
	"testing"

	"github.com/drovehq/drove/planner"
)

// A cluster in Ganeti's text format, in the newest layout, with a group
// policy and one record in an older, shorter layout (node-02: no tags,
// exclusive storage or spindle fields; inst2: no spindle use).
const sample = `group-01|fake-uuid-01|preferred|tagA|net1

node-01|16384|1024|15360|409600|204200|16|M|fake-uuid-01|1|rack:a|N|0|1|1.0
node-02|16384|0|16384|409600|306600|16|N|fake-uuid-01

inst1|1024|51200|1|running|Y|node-01|node-02|drbd|web|1|2|N
inst2|512|1024|2|ADMIN_down|Y|node-02||plain|

htools:iextags:service

|128,1,1024,1,1,1|128,1,1024,1,1,1;32768,8,1048576,16,8,8|drbd,plain|4.0|32.0
group-01|128,1,1024,1,1,1|256,1,1024,1,1,1;32768,8,1048576,16,8,8|drbd|2.0|16.0
`

func TestParseReadsGanetiText(t *testing.T) {
	c, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Groups) != 1 || c.Groups[0].UUID != "fake-uuid-01" || c.Groups[0].Networks[0] != "net1" {
		t.Fatalf("groups: %+v", c.Groups)
	}
	n1, n2 := c.Nodes[0], c.Nodes[1]
	if n1.ReservedMemory != 1024 || n1.FreeDisk != 204200 || n1.Tags[0] != "rack:a" || n2.TotalSpindles != 1 || n2.ExclusiveStorage {
		t.Fatalf("nodes: %+v", c.Nodes)
	}
	i1, i2 := c.Instances[0], c.Instances[1]
	if i1.Secondary != 1 || i1.State != planner.Up || i1.Disks[0].Spindles != 2 || i2.Secondary != planner.NoNode || i2.State != planner.Down || i2.SpindleUse != 1 {
		t.Fatalf("instances: %+v", c.Instances)
	}
	if c.Tags[0] != "htools:iextags:service" || c.Policy.VCPURatio != 4 || c.Groups[0].Policy.MinMax[0].Min.MemorySize != 256 {
		t.Fatalf("tags %v, policies %+v %+v", c.Tags, c.Policy, c.Groups[0].Policy)
	}
}

func TestFormatReadsBack(t *testing.T) {
	c, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(Format(c))
	if err != nil {
		t.Fatalf("%v\n%s", err, Format(c))
	}
	if !reflect.DeepEqual(c, again) {
		t.Fatalf("read back differs:\n%+v\n%+v\n%s", c, again, Format(c))
	}
}

func TestParseRefuses(t *testing.T) {
	for name, text := range map[string]string{
		"too few sections": "g|u|preferred|\n\n",
		"unknown group":    "g|u|preferred|\n\nn|1|0|1|1|1|1|N|other\n\n\n",
		"same nodes":       "g|u|preferred|\n\nn|1|0|1|1|1|1|N|u\n\ni|1|1|1|running|Y|n|n|drbd|\n\n",
		"bad number":       "g|u|preferred|\n\nn|x|0|1|1|1|1|N|u\n\n\n",
	} {
		if _, err := Parse([]byte(text)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestSimulateAndUnits(t *testing.T) {
	c, err := Simulate([]string{"p,8,8T,16g,16", "u,2,100G,64g,8,2,true"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 10 || c.Nodes[0].Name != "node-01-001" || c.Nodes[9].Name != "node-02-002" {
		t.Fatalf("nodes: %d, %s", len(c.Nodes), c.Nodes[0].Name)
	}
	// 8T is decimal: 8e12 bytes, 7629394 MiB, as hspace writes it.
	if c.Nodes[0].TotalDisk != 7629394 || c.Nodes[0].FreeMemory != 16384 || c.Groups[1].AllocPolicy != planner.Unallocable || !c.Nodes[9].ExclusiveStorage {
		t.Fatalf("node %+v, group %+v", c.Nodes[0], c.Groups[1])
	}
	for in, want := range map[string]int64{"1024": 1024, "2g": 2048, "1t": 1 << 20, "1G": 953, "5 MiB": 5} {
		if got, err := ParseUnit(in); err != nil || got != want {
			t.Errorf("ParseUnit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := Simulate([]string{"p,8"}); err == nil || !strings.Contains(err.Error(), "expected 6") {
		t.Errorf("a short spec: %v", err)
	}
}

// After takes the plan's placements into the nodes' books.
func TestAfterAllocation(t *testing.T) {
	c, _ := Simulate([]string{"p,2,1000,4096,4"})
	r := planner.Request{Kind: planner.Allocate, New: []planner.NewInstance{{Instance: planner.Instance{
		Name: "new", Memory: 1024, DiskSpace: 100, Storage: planner.DRBD, State: planner.Down}}}}
	p := &planner.Plan{Allocated: []planner.Allocated{{Instance: "new", Nodes: []string{"node-01-002", "node-01-001"}}}}
	after := After(c, r, p)
	if len(after.Instances) != 1 || after.Nodes[1].FreeMemory != 3072 || after.Nodes[0].FreeMemory != 4096 ||
		after.Nodes[0].FreeDisk != 900 || after.Nodes[1].FreeDisk != 900 || c.Nodes[1].FreeMemory != 4096 {
		t.Fatalf("after: %+v; before: %+v", after.Nodes, c.Nodes)
	}
}

// FuzzParse: the text reader never panics, and what it reads, written
// again, reads back the same.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("g|u|preferred|\n\nn|?|?|?|?|?|?|Y|u\n\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		again, err := Parse(Format(c))
		if err != nil {
			t.Fatalf("Format wrote what Parse refuses: %v\n%s", err, Format(c))
		}
		if len(again.Nodes) != len(c.Nodes) || len(again.Instances) != len(c.Instances) {
			t.Fatalf("read back %d nodes, %d instances; wrote %d, %d", len(again.Nodes), len(again.Instances), len(c.Nodes), len(c.Instances))
		}
	})
}
