package planner

import (
	"fmt"
	"strings"
)

// FailMode is hail's name for why one candidate placement was refused;
// Ganeti's answers count refusals by it ("FailSpindles: 12"). Drove's
// own reasons are finer (failKind); each maps to the mode hail's node
// and policy checks give for the same refusal.
type FailMode uint8

// hail's failure modes, in hail's order (the order its counts are listed).
const (
	FailMem FailMode = iota
	FailDisk
	FailCPU
	FailN1
	FailTags
	FailMig
	FailDiskCount
	FailSpindles
	FailInternal
	NumFailModes
)

var failModeNames = [NumFailModes]string{"FailMem", "FailDisk", "FailCPU", "FailN1", "FailTags", "FailMig",
	"FailDiskCount", "FailSpindles", "FailInternal"}

func (m FailMode) String() string {
	if m < NumFailModes {
		return failModeNames[m]
	}
	return fmt.Sprintf("FailMode(%d)", m)
}

// FailCounts counts refused candidates by mode.
type FailCounts [NumFailModes]int

// String lists the modes that occurred, as hail does: "FailDisk: 1,
// FailSpindles: 2".
func (c FailCounts) String() string {
	var parts []string
	for m, n := range c {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", FailMode(m), n))
		}
	}
	return strings.Join(parts, ", ")
}

// Total is the number of refused candidates.
func (c FailCounts) Total() int {
	t := 0
	for _, n := range c {
		t += n
	}
	return t
}

// NoSolution is hail's sentence for a search nothing passed.
func (c FailCounts) NoSolution() string {
	if c.Total() == 0 {
		return "No valid allocation solutions, failure reasons: unknown reasons"
	}
	return "No valid allocation solutions, failure reasons: " + c.String()
}

// kindModes maps Drove's refusals to hail's modes: hail's node checks
// call a refused reserve or spindle ratio FailDisk, and a node that
// would lose N+1 redundancy or memory for a secondary FailMem; only the
// cluster-wide capacity check (after the search) is FailN1.
var kindModes = [failKinds]FailMode{
	failMem: FailMem, failDisk: FailDisk, failDiskReserve: FailDisk, failSpindles: FailSpindles,
	failSpindleRatio: FailDisk, failCPU: FailCPU, failRedundancy: FailMem, failSecMem: FailMem,
	failTags: FailTags, failCapacity: FailN1, failMigration: FailMig,
}

// mode is the failure's hail mode; a policy refusal carries its own.
func (f failure) mode() FailMode {
	if f.kind == failPolicy {
		return f.pmode
	}
	if f.kind < failKinds {
		return kindModes[f.kind]
	}
	return FailInternal
}

// hailNodes is hail's account of a search over single nodes: each node
// tried and the first check it failed, " Node n1 failed: FailMem;".
func (r *reasons) hailNodes(s *state) string {
	var b strings.Builder
	for _, f := range r.first {
		fmt.Fprintf(&b, " Node %s failed: %s;", s.nodeName(f.node), f.mode())
	}
	return b.String()
}
