package main

import (
	"math"
	"strings"
	"testing"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/planner/iallocator"
)

func smallCluster(t *testing.T) *planner.Cluster {
	t.Helper()
	c, err := clustergen.Generate(clustergen.Spec{NodesPerGroup: 8, Seed: 3,
		Mix: clustergen.Mix{planner.DRBD: 0.8, planner.Plain: 0.1, planner.RBD: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Applying Drove's own answer must give the score Drove computed: the
// recount and the planner's books agree.
func TestApplyMovesMatchesPlannerScore(t *testing.T) {
	c := smallCluster(t)
	nodes := clustergen.NodesOfGroup(c, 0, 2)
	for _, bc := range []benchCase{
		{"evacuate", clustergen.EvacuateNodes(c, nodes, planner.EvacAll), nodes},
		{"change-group", clustergen.ChangeGroupRequest(c, 10, 1), nil},
	} {
		doc, err := iallocator.EncodeRequest(c, bc.req)
		if err != nil {
			t.Fatal(err)
		}
		out, err := iallocator.Answer(doc, planner.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		a, err := parseAnswer(out)
		if err != nil || !a.Success || len(a.Moved) == 0 {
			t.Fatalf("%s: parseAnswer = %+v, %v", bc.name, a, err)
		}
		p, err := planner.Compute(c, bc.req, planner.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		o, err := applyMoves(c, a.Moved, bc.evacuated)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(o.Score-p.ScoreAfter) > 1e-6 || len(o.Problems) > 0 {
			t.Errorf("%s: applied score %v, planner says %v; problems %v", bc.name, o.Score, p.ScoreAfter, o.Problems)
		}
	}
	before, _, _ := planner.Score(c)
	if o, err := applyMoves(c, nil, nil); err != nil || o.Score != before {
		t.Errorf("no moves: score %v, want %v (%v)", o.Score, before, err)
	}
}

func TestApplyMovesFindsBadPlans(t *testing.T) {
	c := smallCluster(t)
	target := c.Nodes[0].Name
	var moved []planner.Moved
	for i := range c.Instances {
		in := &c.Instances[i]
		if in.Storage == planner.RBD && c.Nodes[in.Primary].Group == 0 {
			moved = append(moved, planner.Moved{Instance: in.Name, Group: "g1", Nodes: []string{target}})
		}
	}
	for i := range c.Instances[:40] {
		in := &c.Instances[i]
		if in.Storage == planner.Plain {
			moved = append(moved, planner.Moved{Instance: in.Name, Group: "g2", Nodes: []string{target}})
		}
	}
	o, err := applyMoves(c, moved, []string{target})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(o.Problems, "\n")
	for _, want := range []string{"being emptied", "announced as group g2"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems do not mention %q:\n%s", want, all)
		}
	}
	if _, err := applyMoves(c, []planner.Moved{{Instance: "nope", Nodes: []string{target}}}, nil); err == nil {
		t.Error("an unknown instance was accepted")
	}
}

func TestParseAnswer(t *testing.T) {
	a, err := parseAnswer([]byte(`{"success":true,"info":"ok","result":[[["i1","g1",["n1","n2"]]],[["i2","no room"]],[[{"OP_ID":"x"}],[]]]}`))
	if err != nil || len(a.Moved) != 1 || a.Moved[0].Nodes[1] != "n2" || a.Failed[0].Reason != "no room" || a.Jobs != 2 {
		t.Errorf("parseAnswer = %+v, %v", a, err)
	}
	a, err = parseAnswer([]byte(`{"success":false,"info":"Error: bad","result":[]}`))
	if err != nil || a.Success || a.Info != "Error: bad" {
		t.Errorf("failure answer = %+v, %v", a, err)
	}
	for _, bad := range []string{`not json`, `{"success":true,"result":[[],[]]}`, `{"success":true,"result":[[["i1"]],[],[]]}`} {
		if _, err := parseAnswer([]byte(bad)); err == nil {
			t.Errorf("parseAnswer(%s) accepted it", bad)
		}
	}
}
