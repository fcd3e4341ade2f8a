package planner

import (
	"fmt"
	"strings"
)

// reasons gathers why nodes refused an instance, so that the failure an
// operator reads names the resource and the nodes: "not enough memory on 3
// nodes (node4: 512 MiB free, needs 2048 MiB)" rather than Ganeti's bare
// "FailMem".
type reasons struct {
	count  [failKinds]int
	sample [failKinds][]failure
	seen   map[int32]bool
	// modes counts every refused candidate by hail's mode, and first
	// keeps each node's first refusal in order, for hail's words.
	modes FailCounts
	first []failure
}

const reasonSamples = 3

func (r *reasons) add(f failure) {
	if r.seen == nil {
		r.seen = map[int32]bool{}
	}
	r.modes[f.mode()]++
	if r.seen[f.node] {
		return // one reason per node: the first check it failed
	}
	r.seen[f.node] = true
	r.first = append(r.first, f)
	r.count[f.kind]++
	if len(r.sample[f.kind]) < reasonSamples {
		r.sample[f.kind] = append(r.sample[f.kind], f)
	}
}

func (r *reasons) empty() bool { return len(r.seen) == 0 }

// describe renders the gathered reasons, most frequent first.
func (r *reasons) describe(s *state) string {
	type part struct {
		n    int
		text string
	}
	var parts []part
	for k := failKind(1); k < failKinds; k++ {
		if r.count[k] == 0 {
			continue
		}
		var ex []string
		for _, f := range r.sample[k] {
			ex = append(ex, describeFailure(s, f))
		}
		nodes := "nodes"
		if r.count[k] == 1 {
			nodes = "node"
		}
		parts = append(parts, part{r.count[k], fmt.Sprintf("%s on %d %s (%s)", failTitles[k], r.count[k], nodes, strings.Join(ex, "; "))})
	}
	for i := 1; i < len(parts); i++ {
		for j := i; j > 0 && parts[j].n > parts[j-1].n; j-- {
			parts[j], parts[j-1] = parts[j-1], parts[j]
		}
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.text
	}
	return strings.Join(out, "; ")
}

var failTitles = [failKinds]string{
	failMem:          "not enough memory",
	failDisk:         "not enough disk",
	failDiskReserve:  "disk reserve would be used",
	failSpindles:     "not enough free spindles",
	failSpindleRatio: "spindle ratio limit reached",
	failCPU:          "vCPU ratio limit reached",
	failRedundancy:   "N+1 redundancy would be lost",
	failSecMem:       "too little memory to take it over as secondary",
	failTags:         "exclusion tag conflict",
	failPolicy:       "outside the instance policy",
	failCapacity:     "the cluster would lose N+1 redundancy",
	failMigration:    "migration not allowed by migration tags",
}

func describeFailure(s *state, f failure) string {
	name := s.nodeName(f.node)
	switch f.kind {
	case failMem, failSecMem:
		return fmt.Sprintf("%s: %d MiB free, needs %d MiB", name, f.have, f.need)
	case failDisk:
		return fmt.Sprintf("%s: %d MiB free, needs %d MiB", name, f.have, f.need)
	case failDiskReserve:
		return fmt.Sprintf("%s: %d MiB above its reserve, needs %d MiB", name, f.have, f.need)
	case failSpindles, failSpindleRatio:
		if f.need < 0 {
			return fmt.Sprintf("%s: exclusive storage needs the disks' spindle counts, which are unknown", name)
		}
		return fmt.Sprintf("%s: room for %d spindles, needs %d", name, f.have, f.need)
	case failCPU:
		return fmt.Sprintf("%s: room for %d vCPUs, needs %d", name, f.have, f.need)
	case failRedundancy:
		return fmt.Sprintf("%s: %d MiB spare beyond its failover reserve, needs %d MiB", name, f.have, f.need)
	case failTags:
		return fmt.Sprintf("%s already runs an instance tagged %q", name, f.tag)
	case failPolicy, failCapacity, failMigration:
		return fmt.Sprintf("%s: %s", name, f.tag)
	}
	return name
}
