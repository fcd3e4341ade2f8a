package iallocator_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/iallocator"
)

// allocAnswer is the part of an allocate, multi-allocate or relocate
// answer that must agree with hail: whether it succeeded and the result
// (the chosen nodes, or [[allocated], [failed names]]).
type allocAnswer struct {
	Success bool
	Result  string
}

func readAllocAnswer(t *testing.T, who, kind string, out []byte) allocAnswer {
	t.Helper()
	w, _ := parseWire(t, who, out)
	a := allocAnswer{Success: w.Success}
	if !w.Success {
		return a
	}
	if kind != "multi-allocate" {
		a.Result = string(w.Result)
		return a
	}
	var parts [2][][2]json.RawMessage
	if err := json.Unmarshal(w.Result, &parts); err != nil {
		t.Fatalf("%s: multi-allocate result is not [allocated, failed]: %s", who, w.Result)
	}
	var failed []string
	for _, f := range parts[1] {
		failed = append(failed, string(f[0])) // names only: the reasons are each tool's own words
	}
	a.Result = fmt.Sprintf("%s %v", mustJSON(parts[0]), failed)
	return a
}

func parseWire(t *testing.T, who string, out []byte) (wireResult, error) {
	t.Helper()
	var w wireResult
	if err := json.Unmarshal(out, &w); err != nil {
		t.Fatalf("%s printed no result (%v): %s", who, err, out)
	}
	return w, nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func runHailFlags(t *testing.T, input []byte, flags ...string) []byte {
	t.Helper()
	f := filepath.Join(t.TempDir(), "request.json")
	if err := os.WriteFile(f, input, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(hailPath(t), append(flags, f)...).Output()
	if err != nil {
		t.Fatalf("hail: %v", err)
	}
	return out
}

// Every allocate, multi-allocate, relocate and allocate-secondary request in Ganeti's test
// data, with the hail flags Ganeti's own tests use on it, gets the answer
// hail gives: the same success or failure and the same nodes. Hail's
// choice is forced on all of them (its tests assert the nodes), except
// where two placements tie exactly, and there both break ties the same way.
func TestGanetiAllocationRequestsAnsweredAsHail(t *testing.T) {
	dir := ganetiData(t)
	type flagged struct {
		file  string
		flags []string
	}
	var cases []flagged
	for _, f := range []string{
		"hail-alloc-drbd.json", "hail-alloc-dedicated-1.json", "hail-alloc-desired-location.json",
		"hail-alloc-invalid-network.json", "hail-alloc-invalid-twodisks.json", "hail-alloc-nlocation.json",
		"hail-alloc-plain-tags.json", "hail-alloc-restricted-network.json", "hail-alloc-spindles.json",
		"hail-alloc-twodisks.json", "hail-alloc-drbd-restricted.json", "hail-alloc-ext.json",
		"hail-multialloc-dedicated.json", "hail-reloc-drbd.json", "hail-reloc-drbd-crowded.json",
		"hail-alloc-secondary.json",
	} {
		cases = append(cases, flagged{f, nil})
	}
	for _, f := range []string{"hail-alloc-drbd.json", "hail-reloc-drbd.json", "hail-alloc-twodisks.json",
		"hail-alloc-invalid-twodisks.json", "hail-alloc-spindles.json"} {
		cases = append(cases, flagged{f + ".excl-stor", nil}, flagged{f + ".fail-excl-stor", nil})
	}
	cases = append(cases,
		flagged{"hail-reloc-drbd-crowded.json", []string{"--ignore-soft-errors"}},
		flagged{"hail-alloc-plain-tags.json", []string{"--ignore-soft-errors"}},
		flagged{"hail-alloc-twodisks.json", []string{"--no-capacity-checks"}},
		flagged{"hail-alloc-spindles.json", []string{"--no-capacity-checks"}},
		flagged{"hail-alloc-drbd.json", []string{"--no-capacity-checks"}},
	)
	succeeded := 0
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.file, tc.flags), func(t *testing.T) {
			input := ganetiRequest(t, dir, tc.file)
			_, r, err := iallocator.Decode(input)
			if err != nil {
				t.Fatal(err)
			}
			opts := planner.DefaultOptions()
			for _, f := range tc.flags {
				opts.IgnoreSoftErrors = opts.IgnoreSoftErrors || f == "--ignore-soft-errors"
				opts.NoCapacityChecks = opts.NoCapacityChecks || f == "--no-capacity-checks"
			}
			hail := readAllocAnswer(t, "hail", string(r.Kind), runHailFlags(t, input, tc.flags...))
			out, err := iallocator.Answer(input, opts)
			if err != nil {
				t.Fatal(err)
			}
			drove := readAllocAnswer(t, "drove", string(r.Kind), out)
			if hail != drove {
				t.Fatalf("hail %+v\ndrove %+v\n%s", hail, drove, out)
			}
			if drove.Success {
				succeeded++
			}
		})
	}
	if succeeded < 10 {
		t.Errorf("only %d of the requests succeeded: the test data is not what it should be", succeeded)
	}
}
