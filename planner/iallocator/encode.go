package iallocator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/drovehq/drove/planner"
)

// Ganeti's opcode fields, in the order hail prints them. Drove adds the
// standard "depends" field to the first opcode of a job that must wait.

type migrateOp struct {
	OpID                string `json:"OP_ID"`
	InstanceName        string `json:"instance_name"`
	TargetNode          string `json:"target_node,omitempty"`
	AllowRuntimeChanges bool   `json:"allow_runtime_changes"`
	IgnoreIPolicy       bool   `json:"ignore_ipolicy"`
	Cleanup             bool   `json:"cleanup"`
	AllowFailover       bool   `json:"allow_failover"`
	IgnoreHVVersions    bool   `json:"ignore_hvversions"`
	Depends             []any  `json:"depends,omitempty"`
}

type failoverOp struct {
	OpID              string `json:"OP_ID"`
	InstanceName      string `json:"instance_name"`
	ShutdownTimeout   int    `json:"shutdown_timeout"`
	IgnoreConsistency bool   `json:"ignore_consistency"`
	TargetNode        string `json:"target_node,omitempty"`
	IgnoreIPolicy     bool   `json:"ignore_ipolicy"`
	Cleanup           bool   `json:"cleanup"`
	Depends           []any  `json:"depends,omitempty"`
}

type replaceDisksOp struct {
	OpID          string `json:"OP_ID"`
	InstanceName  string `json:"instance_name"`
	EarlyRelease  bool   `json:"early_release"`
	IgnoreIPolicy bool   `json:"ignore_ipolicy"`
	Mode          string `json:"mode"`
	Disks         []int  `json:"disks"`
	RemoteNode    string `json:"remote_node"`
	Depends       []any  `json:"depends,omitempty"`
}

// Ganeti's default shutdown timeout, in seconds.
const defaultShutdownTimeout = 120

func wireOpcode(op planner.Opcode, depends []any) any {
	switch op.Kind {
	case planner.OpFailover:
		return failoverOp{OpID: string(op.Kind), InstanceName: op.Instance,
			ShutdownTimeout: defaultShutdownTimeout, IgnoreConsistency: op.IgnoreConsistency,
			TargetNode: op.TargetNode, Depends: depends}
	case planner.OpReplaceDisks:
		return replaceDisksOp{OpID: string(op.Kind), InstanceName: op.Instance,
			Mode: op.Mode, Disks: []int{}, RemoteNode: op.RemoteNode, Depends: depends}
	}
	return migrateOp{OpID: string(op.Kind), InstanceName: op.Instance, TargetNode: op.TargetNode,
		AllowFailover: op.AllowFailover, IgnoreHVVersions: true, Depends: depends}
}

// wireDepends renders dependencies as Ganeti's relative job ids: -1 is the
// job submitted just before this one.
func wireDepends(job int, deps []planner.Dependency) []any {
	var out []any
	for _, d := range deps {
		st := make([]string, 0, len(d.Statuses))
		for _, s := range d.Statuses {
			st = append(st, string(s))
		}
		out = append(out, []any{d.Job - job, st})
	}
	return out
}

type response struct {
	Success bool   `json:"success"`
	Info    string `json:"info"`
	Result  any    `json:"result"`
}

// EncodeResult renders a plan as Ganeti's answer to a node-evacuate or
// change-group request.
func EncodeResult(p *planner.Plan) ([]byte, error) {
	moved := make([]any, 0, len(p.Moved))
	for _, m := range p.Moved {
		moved = append(moved, []any{m.Instance, m.Group, m.Nodes})
	}
	failed := make([]any, 0, len(p.Failed))
	for _, f := range p.Failed {
		failed = append(failed, []any{f.Instance, hailReason(f)})
	}
	jobs := make([]any, 0, len(p.Jobs))
	for j, job := range p.Jobs {
		ops := make([]any, 0, len(job.Opcodes))
		for k, op := range job.Opcodes {
			var deps []any
			if k == 0 {
				deps = wireDepends(j, job.Depends)
			}
			ops = append(ops, wireOpcode(op, deps))
		}
		jobs = append(jobs, ops)
	}
	info := fmt.Sprintf("Request successful: %d instances failed to move and %d were moved successfully", len(p.Failed), len(p.Moved))
	return marshal(response{Success: true, Info: info, Result: []any{moved, failed, jobs}})
}

// hailReason is a failure in hail's words, which Ganeti's answers carry;
// Drove's fuller reason when the planner gave none.
func hailReason(f planner.Failed) string {
	if f.Hail != "" {
		return f.Hail
	}
	return f.Reason
}

// Explain is Drove's own account of a plan, fuller than hail's words in
// the answer: the cluster score before and after, each group's, the
// nodes emptied, the choices of allocations and why each failure failed.
// `drove iallocator -v` prints it on standard error.
func Explain(p *planner.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster score %.8f -> %.8f", p.ScoreBefore, p.ScoreAfter)
	for _, g := range p.Groups {
		fmt.Fprintf(&b, "; group %s %.8f -> %.8f", g.Group, g.Before, g.After)
	}
	if len(p.EvacuatedNodes) > 0 {
		fmt.Fprintf(&b, "; evacuated nodes %s", strings.Join(p.EvacuatedNodes, ","))
	}
	for _, l := range p.Log {
		fmt.Fprintf(&b, "\n%s", l)
	}
	for _, f := range p.Failed {
		fmt.Fprintf(&b, "\n%s failed: %s", f.Instance, f.Reason)
	}
	return b.String()
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
