package jobs

import (
	"maps"
	"testing"

	"github.com/drovehq/drove/events"
)

// A dispatch carries the facts its executor needs (it reads no
// inventory): the first opcode of a job the inventory's, a later one the
// placement the opcode before it leaves, even before the service has read
// that opcode's InstancePlaced.
func TestDispatchCarriesTheInstanceFacts(t *testing.T) {
	t.Parallel()
	w := newWorld()
	for _, n := range []string{"n1", "n2", "n3"} {
		w.read(events.NodeAnnounced{Name: n, Group: "g-" + n, VMCapable: true,
			Total: events.Resources{MemoryMiB: 65536, DiskMiB: 1 << 20, CPUs: 32}})
	}
	size := events.Size{MemoryMiB: 512, VCPUs: 1, DisksMiB: []int64{1024}}
	w.read(events.InstanceDeclared{Name: "a", Owner: "o", Size: size, Storage: events.StorageDRBD,
		RunState: events.RunRunning, PrimaryNode: "n1", SecondaryNode: "n2"})
	w.read(events.EvacuationRequested{Request: "r1", Nodes: []string{"n1"}, Mode: events.EvacAll})
	swap := events.Opcode{OpID: events.OpInstanceMigrate, Instance: "a", From: "n1", To: "n2"}
	replace := events.Opcode{OpID: events.OpInstanceReplaceDisks, Instance: "a", Mode: events.ModeReplaceNewSecondary,
		RemoteNode: "n3", From: "n2", To: "n3"}
	w.read(events.PlanComputed{Request: "r1", Jobs: []events.Job{{Index: 0, Opcodes: []events.Opcode{swap, replace}}}})

	first := dispatched(t, Decide(w.env, w.st, "r1"))
	want := events.InstanceFacts{Size: size, Storage: events.StorageDRBD, RunState: events.RunRunning,
		Primary: "n1", Secondary: "n2", Groups: map[string]string{"n1": "g-n1", "n2": "g-n2"}}
	same(t, "the first opcode", first.Facts, want)

	w.read(events.OpcodeEnded{Request: "r1", Job: 0, Index: 0, Node: "n1", Status: events.JobSuccess})
	second := dispatched(t, Decide(w.env, w.st, "r1"))
	if second.Index != 1 || second.Node != "n2" {
		t.Fatalf("dispatched %+v, want opcode 1 on n2", second)
	}
	want.Primary, want.Secondary = "n2", "n1" // the swap's, not the inventory's (not read yet)
	want.Groups = map[string]string{"n1": "g-n1", "n2": "g-n2", "n3": "g-n3"}
	same(t, "the second opcode", second.Facts, want)
}

func dispatched(t *testing.T, d Decision) events.OpcodeDispatched {
	t.Helper()
	for _, e := range d.Events {
		if e.Type == events.TypeOpcodeDispatched {
			p, err := events.As[events.OpcodeDispatched](e)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("no dispatch among %v", types(d))
	return events.OpcodeDispatched{}
}

func same(t *testing.T, what string, got *events.InstanceFacts, want events.InstanceFacts) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no facts", what)
	}
	g, w := *got, want
	if !maps.Equal(g.Groups, w.Groups) || g.Primary != w.Primary || g.Secondary != w.Secondary ||
		g.Storage != w.Storage || g.RunState != w.RunState || g.Size.MemoryMiB != w.Size.MemoryMiB {
		t.Fatalf("%s: facts %+v, want %+v", what, g, w)
	}
}
