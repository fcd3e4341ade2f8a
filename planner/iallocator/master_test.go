package iallocator_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/iallocator"
)

// Ganeti's master reads an allocator's answer and refuses what it cannot
// use (lib/masterd/iallocator.py, Ganeti 3.0: IAllocator._ValidateResult
// and each request class's REQ_RESULT and ValidateResult). masterAccepts
// restates those rules: a dict with success, info and result; when
// success, a result of the shape the request's kind calls for.
func masterAccepts(req map[string]any, out []byte) error {
	var ans map[string]any
	if err := json.Unmarshal(out, &ans); err != nil {
		return fmt.Errorf("can't parse iallocator results: %v", err)
	}
	for _, k := range []string{"success", "info", "result"} {
		if _, ok := ans[k]; !ok {
			return fmt.Errorf("can't parse iallocator results: missing key %q", k)
		}
	}
	if ans["success"] != true {
		return nil // Ganeti reads no result from a failure
	}
	r := req["request"].(map[string]any)
	result := ans["result"]
	switch r["type"] {
	case "allocate":
		want := 1.0
		if r["disk_template"] == "drbd" { // constants.DTS_INT_MIRROR
			want = 2
		}
		if l, ok := result.([]any); !ok || float64(len(l)) != want {
			return fmt.Errorf("allocate: want a list of %v nodes, got %v", want, result)
		}
	case "allocate-secondary":
		if _, ok := result.(string); !ok {
			return fmt.Errorf("allocate-secondary: want a node name, got %v", result)
		}
	case "multi-allocate":
		return checkMultiAlloc(result)
	case "relocate":
		return checkRelocate(req, r, result)
	case "node-evacuate", "change-group":
		return checkNodeEvac(result)
	default:
		return fmt.Errorf("unknown request type %v", r["type"])
	}
	return nil
}

// checkMultiAlloc: [[[name, [node, ...]], ...], [name, ...]].
func checkMultiAlloc(result any) error {
	parts, ok := result.([]any)
	if !ok || len(parts) != 2 {
		return fmt.Errorf("multi-allocate: want [allocated, failed], got %v", result)
	}
	done, ok := parts[0].([]any)
	if !ok {
		return fmt.Errorf("multi-allocate: allocated is not a list: %v", parts[0])
	}
	for _, a := range done {
		pair, ok := a.([]any)
		if !ok || len(pair) != 2 || !nonEmptyString(pair[0]) || !listOf(pair[1], nonEmptyString) {
			return fmt.Errorf("multi-allocate: allocated entry %v is not [name, [nodes]]", a)
		}
	}
	if !listOf(parts[1], nonEmptyString) {
		return fmt.Errorf("multi-allocate: failed %v is not a list of names", parts[1])
	}
	return nil
}

// checkRelocate: a list of nodes, all in the groups of the nodes the
// instance is relocated from and of its primary.
func checkRelocate(req, r map[string]any, result any) error {
	nodes, ok := result.([]any)
	if !ok {
		return fmt.Errorf("relocate: want a list, got %v", result)
	}
	groupOf := func(n any) any {
		node, _ := req["nodes"].(map[string]any)[fmt.Sprint(n)].(map[string]any)
		return node["group"]
	}
	inst := req["instances"].(map[string]any)[r["name"].(string)].(map[string]any)
	primary := inst["nodes"].([]any)[0]
	allowed := []any{groupOf(primary)}
	for _, n := range r["relocate_from"].([]any) {
		allowed = append(allowed, groupOf(n))
	}
	for _, n := range append(nodes, primary) {
		if !slices.Contains(allowed, groupOf(n)) {
			return fmt.Errorf("relocate: node %v is in group %v, not one of the original groups %v", n, groupOf(n), allowed)
		}
	}
	return nil
}

// checkNodeEvac: [moved, failed, jobs]: moved [name, group, [nodes]],
// failed [name, reason or null], jobs lists of opcodes with an OP_ID
// Ganeti submits for evacuations.
func checkNodeEvac(result any) error {
	parts, ok := result.([]any)
	if !ok || len(parts) != 3 {
		return fmt.Errorf("want [moved, failed, jobs], got %v", result)
	}
	moved := func(v any) bool {
		m, ok := v.([]any)
		return ok && len(m) == 3 && nonEmptyString(m[0]) && nonEmptyString(m[1]) && listOf(m[2], nonEmptyString)
	}
	failed := func(v any) bool {
		f, ok := v.([]any)
		if !ok || len(f) != 2 {
			return false
		}
		_, isString := f[1].(string)
		return nonEmptyString(f[0]) && (f[1] == nil || isString)
	}
	opcode := func(v any) bool {
		op, ok := v.(map[string]any)
		return ok && slices.Contains([]any{"OP_INSTANCE_FAILOVER", "OP_INSTANCE_MIGRATE", "OP_INSTANCE_REPLACE_DISKS"}, op["OP_ID"])
	}
	job := func(v any) bool { return listOf(v, opcode) }
	switch {
	case !listOf(parts[0], moved):
		return fmt.Errorf("moved %v is not [[name, group, [nodes]], ...]", parts[0])
	case !listOf(parts[1], failed):
		return fmt.Errorf("failed %v is not [[name, reason], ...]", parts[1])
	case !listOf(parts[2], job):
		return fmt.Errorf("jobs %v are not lists of evacuation opcodes", parts[2])
	}
	return nil
}

func nonEmptyString(v any) bool { s, ok := v.(string); return ok && s != "" }

func listOf(v any, each func(any) bool) bool {
	l, ok := v.([]any)
	if !ok {
		return false
	}
	for _, x := range l {
		if !each(x) {
			return false
		}
	}
	return true
}

// Every request in Ganeti's test data, and the variants Ganeti's shell
// tests make of them, gets an answer Ganeti's master accepts, with and
// without --ignore-soft-errors and --no-capacity-checks.
func TestAnswersPassGanetiMasterValidation(t *testing.T) {
	dir := ganetiData(t)
	files, err := filepath.Glob(filepath.Join(dir, "hail-*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no requests in %s (%v)", dir, err)
	}
	answered := 0
	for _, f := range files {
		for _, name := range []string{filepath.Base(f), filepath.Base(f) + ".excl-stor", filepath.Base(f) + ".fail-excl-stor"} {
			input := ganetiRequest(t, dir, name)
			var req map[string]any
			if err := json.Unmarshal(input, &req); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, o := range []planner.Options{planner.DefaultOptions(), {MaxMovesPerNode: 2, PairCandidates: 12, IgnoreSoftErrors: true, NoCapacityChecks: true}} {
				out, err := iallocator.Answer(input, o)
				if err != nil {
					// A request Drove refuses outright (hail-invalid-reloc)
					// gets no answer for the master to read.
					continue
				}
				answered++
				if err := masterAccepts(req, out); err != nil {
					t.Errorf("%s: Ganeti's master would refuse the answer: %v\n%s", name, err, out)
				}
			}
		}
	}
	if answered < 2*len(files) {
		t.Fatalf("only %d answers for %d requests", answered, len(files))
	}
}

// The rules themselves refuse what Ganeti refuses: hail's own multi-
// allocate answer with a failure ([name, reason] pairs) and an allocate
// answer with one node for a DRBD instance.
func TestMasterRulesRefuse(t *testing.T) {
	multi := map[string]any{"request": map[string]any{"type": "multi-allocate"}}
	if masterAccepts(multi, []byte(`{"success":true,"info":"","result":[[],[["inst1","No valid allocation solutions"]]]}`)) == nil {
		t.Error("a failed list of pairs passed")
	}
	if err := masterAccepts(multi, []byte(`{"success":true,"info":"","result":[[["inst2",["n1"]]],["inst1"]]}`)); err != nil {
		t.Errorf("a valid multi-allocate answer was refused: %v", err)
	}
	drbd := map[string]any{"request": map[string]any{"type": "allocate", "disk_template": "drbd"}}
	if masterAccepts(drbd, []byte(`{"success":true,"info":"","result":["n1"]}`)) == nil {
		t.Error("one node for a DRBD instance passed")
	}
	if masterAccepts(drbd, []byte(`{"success":true,"result":["n1","n2"]}`)) == nil {
		t.Error("an answer without info passed")
	}
}
