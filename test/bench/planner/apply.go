package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
)

// answer is an IAllocator result, as hail and Drove print it.
type answer struct {
	Success bool
	Info    string
	Moved   []planner.Moved
	Failed  []planner.Failed
	Jobs    int
}

// parseAnswer reads {"success", "info", "result": [moved, failed, jobs]}
// with moved entries [instance, group, [primary, secondary?]] and failed
// entries [instance, reason].
func parseAnswer(data []byte) (answer, error) {
	var doc struct {
		Success bool              `json:"success"`
		Info    string            `json:"info"`
		Result  []json.RawMessage `json:"result"`
	}
	var a answer
	if err := json.Unmarshal(data, &doc); err != nil {
		return a, fmt.Errorf("not an IAllocator result: %w", err)
	}
	a.Success, a.Info = doc.Success, doc.Info
	if !doc.Success {
		return a, nil
	}
	if len(doc.Result) != 3 {
		return a, fmt.Errorf("result has %d parts, want [moved, failed, jobs]", len(doc.Result))
	}
	var moved [][]json.RawMessage
	if err := json.Unmarshal(doc.Result[0], &moved); err != nil {
		return a, fmt.Errorf("moved: %w", err)
	}
	for i, m := range moved {
		var mv planner.Moved
		if len(m) != 3 {
			return a, fmt.Errorf("moved[%d] has %d fields, want 3", i, len(m))
		}
		for k, dst := range []any{&mv.Instance, &mv.Group, &mv.Nodes} {
			if err := json.Unmarshal(m[k], dst); err != nil {
				return a, fmt.Errorf("moved[%d][%d]: %w", i, k, err)
			}
		}
		a.Moved = append(a.Moved, mv)
	}
	var failed [][]string
	if err := json.Unmarshal(doc.Result[1], &failed); err != nil {
		return a, fmt.Errorf("failed: %w", err)
	}
	for _, f := range failed {
		if len(f) != 2 {
			return a, fmt.Errorf("failed entry %q has %d fields, want 2", f, len(f))
		}
		a.Failed = append(a.Failed, planner.Failed{Instance: f[0], Reason: f[1]})
	}
	var jobs []json.RawMessage
	if err := json.Unmarshal(doc.Result[2], &jobs); err != nil {
		return a, fmt.Errorf("jobs: %w", err)
	}
	a.Jobs = len(jobs)
	return a, nil
}

// outcome is what a tool's moves do to the cluster.
type outcome struct {
	Score float64
	// Problems lists what makes the plan invalid: a node over capacity, a
	// moved instance still on a node being emptied, a node in another group
	// than announced.
	Problems []string
}

// applyMoves places each moved instance on its listed nodes, recounts free
// memory and disk from the placements, and scores the result. evacuated are
// the nodes a node-evacuate request empties (nil for change-group).
func applyMoves(c *planner.Cluster, moved []planner.Moved, evacuated []string) (outcome, error) {
	var out outcome
	after := *c
	after.Nodes = append([]planner.Node(nil), c.Nodes...)
	after.Instances = append([]planner.Instance(nil), c.Instances...)
	nodeIdx := make(map[string]int, len(c.Nodes))
	for i := range c.Nodes {
		nodeIdx[c.Nodes[i].Name] = i
	}
	instIdx := make(map[string]int, len(c.Instances))
	for i := range c.Instances {
		instIdx[c.Instances[i].Name] = i
	}
	gone := map[int]bool{}
	for _, n := range evacuated {
		gone[nodeIdx[n]] = true
	}
	for _, m := range moved {
		i, ok := instIdx[m.Instance]
		if !ok {
			return out, fmt.Errorf("moved instance %q is not in the cluster", m.Instance)
		}
		in := &after.Instances[i]
		if len(m.Nodes) == 0 {
			return out, fmt.Errorf("moved instance %q has no nodes", m.Instance)
		}
		var idx []int
		for _, n := range m.Nodes {
			ni, ok := nodeIdx[n]
			if !ok {
				return out, fmt.Errorf("instance %q moved to unknown node %q", m.Instance, n)
			}
			idx = append(idx, ni)
			if gone[ni] {
				out.Problems = append(out.Problems, fmt.Sprintf("%s moved onto %s, which is being emptied", m.Instance, n))
			}
			if g := c.Groups[c.Nodes[ni].Group].Name; g != m.Group {
				out.Problems = append(out.Problems, fmt.Sprintf("%s moved to %s of group %s, announced as group %s", m.Instance, n, g, m.Group))
			}
		}
		in.Primary, in.Secondary = idx[0], planner.NoNode
		if in.Storage.Mirroring() == planner.MirroredInternally {
			if len(idx) < 2 || idx[1] == idx[0] {
				return out, fmt.Errorf("mirrored instance %q moved to %v: needs two distinct nodes", m.Instance, m.Nodes)
			}
			in.Secondary = idx[1]
		}
	}
	clustergen.Recount(&after)
	for i := range after.Nodes {
		n := &after.Nodes[i]
		if n.FreeMemory < 0 {
			out.Problems = append(out.Problems, fmt.Sprintf("%s is %d MiB over its memory", n.Name, -n.FreeMemory))
		}
		if n.FreeDisk < 0 {
			out.Problems = append(out.Problems, fmt.Sprintf("%s is %d MiB over its disk", n.Name, -n.FreeDisk))
		}
	}
	score, _, err := planner.Score(&after)
	if err != nil {
		return out, fmt.Errorf("scoring the cluster after the moves: %w", err)
	}
	out.Score = score
	return out, nil
}

// summarizeProblems keeps a problem list readable.
func summarizeProblems(p []string) string {
	if len(p) > 3 {
		return strings.Join(p[:3], "; ") + fmt.Sprintf("; and %d more", len(p)-3)
	}
	return strings.Join(p, "; ")
}
