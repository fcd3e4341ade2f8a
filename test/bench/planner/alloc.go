package main

import (
	"encoding/json"
	"fmt"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
)

// allocCases are the requests that place rather than move: one new
// mirrored instance, and a new secondary for one mirrored instance.
func allocCases(c *planner.Cluster, seed uint64) []benchCase {
	out := []benchCase{{name: "allocate 1 (drbd)", req: planner.Request{Kind: planner.Allocate,
		New: clustergen.NewInstances(1, clustergen.Mix{planner.DRBD: 1}, seed)}}}
	if r, ok := clustergen.RelocateRequest(c, seed); ok {
		out = append(out, benchCase{name: "relocate 1 (new secondary)", req: r})
	}
	return out
}

// placing reports whether a case's answer is a list of nodes.
func placing(k planner.RequestKind) bool {
	return k == planner.Allocate || k == planner.Relocate
}

// fillPlacement parses an allocate or relocate answer into t: the chosen
// nodes applied to the cluster, recounted, checked and scored as moves are.
func fillPlacement(c *planner.Cluster, bc benchCase, stdout []byte, t *toolResult) {
	var doc struct {
		Success bool     `json:"success"`
		Info    string   `json:"info"`
		Result  []string `json:"result"`
	}
	if err := json.Unmarshal(stdout, &doc); err != nil {
		t.Error = fmt.Sprintf("not an IAllocator result: %v", err)
		return
	}
	if !doc.Success || len(doc.Result) == 0 {
		t.Error = "answered success=false: " + doc.Info
		return
	}
	var m planner.Moved
	cx := c
	switch bc.req.Kind {
	case planner.Allocate:
		// The new instance joins the cluster on its chosen nodes.
		after := *c
		ni := bc.req.New[0]
		in := ni.Instance
		in.Primary, in.Secondary = c.NodeIndex(doc.Result[0]), planner.NoNode
		if in.Primary < 0 {
			t.Error = fmt.Sprintf("placed on unknown node %q", doc.Result[0])
			return
		}
		after.Instances = append(append([]planner.Instance(nil), c.Instances...), in)
		cx = &after
		m = planner.Moved{Instance: in.Name, Nodes: doc.Result}
	case planner.Relocate:
		in := &c.Instances[c.InstanceIndex(bc.req.Instances[0])]
		m = planner.Moved{Instance: in.Name, Nodes: doc.Result}
		if in.Storage.Mirroring() == planner.MirroredInternally {
			m.Nodes = []string{c.Nodes[in.Primary].Name, doc.Result[0]}
		}
	}
	if g := cx.NodeIndex(m.Nodes[0]); g >= 0 {
		m.Group = cx.Groups[cx.Nodes[g].Group].Name
	}
	o, err := applyMoves(cx, []planner.Moved{m}, nil)
	if err != nil {
		t.Error = err.Error()
		return
	}
	t.Moved = 1
	t.Score, t.Problems = &o.Score, o.Problems
}
