package htoolsdata

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/drovehq/drove/planner"
)

// Simulate builds the empty cluster of htools' --simulate: one group per
// spec, each "policy,nodes,disk,memory,cpus[,spindles[,exclusive
// storage]]" (policy: preferred, last_resort, unallocable or p, a, u;
// sizes in MiB or with a unit, as "8T" or "16g"). Group i (from 1) is
// group-0i with uuid fake-uuid-0i; its nodes are node-0i-00j, empty, each
// keeping one CPU for itself, as Ganeti simulates them.
func Simulate(specs []string) (*planner.Cluster, error) {
	c := &planner.Cluster{Policy: planner.DefaultIPolicy()}
	for i, spec := range specs {
		if err := simulateGroup(c, i+1, spec); err != nil {
			return nil, err
		}
	}
	return c, nil
}

var policyAbbrev = map[string]planner.AllocPolicy{"p": planner.Preferred, "a": planner.LastResort, "u": planner.Unallocable}

func simulateGroup(c *planner.Cluster, gi int, spec string) error {
	f := strings.Split(spec, ",")
	if len(f) < 5 || len(f) > 7 {
		return fmt.Errorf("invalid cluster specification, expected 6 comma-separated sections (allocation policy, node count, disk size, memory size, number of CPUs, spindles) but got %d: '%s'", len(f), spec)
	}
	f, _ = pad(f, 5, "1", "False")
	pol := planner.AllocPolicy(f[0])
	if p, ok := policyAbbrev[f[0]]; ok {
		pol = p
	}
	if !pol.Valid() {
		return fmt.Errorf("cannot parse allocation policy %q", f[0])
	}
	count, err := strconv.Atoi(f[1])
	if err != nil {
		return fmt.Errorf("node count: %v", err)
	}
	disk, err := ParseUnit(f[2])
	if err != nil {
		return fmt.Errorf("disk size: %v", err)
	}
	mem, err := ParseUnit(f[3])
	if err != nil {
		return fmt.Errorf("memory size: %v", err)
	}
	cpus, err1 := strconv.ParseInt(f[4], 10, 64)
	spindles, err2 := strconv.ParseInt(f[5], 10, 64)
	excl, err3 := strconv.ParseBool(f[6])
	if err1 != nil || err2 != nil || err3 != nil {
		return fmt.Errorf("invalid cluster specification %q: cpus, spindles or exclusive storage unreadable", spec)
	}
	c.Groups = append(c.Groups, planner.Group{Name: fmt.Sprintf("group-%02d", gi), UUID: fmt.Sprintf("fake-uuid-%02d", gi),
		AllocPolicy: pol, Policy: planner.DefaultIPolicy()})
	for j := 1; j <= count; j++ {
		c.Nodes = append(c.Nodes, planner.Node{Name: fmt.Sprintf("node-%02d-%03d", gi, j), Group: len(c.Groups) - 1,
			TotalMemory: mem, FreeMemory: mem, TotalDisk: disk, FreeDisk: disk, TotalCPUs: cpus, ReservedCPUs: 1,
			TotalSpindles: spindles, ExclusiveStorage: excl, VMCapable: true})
	}
	return nil
}

// ParseUnit reads a size as Ganeti does, in MiB: a number with an
// optional unit, binary in lower case or with "iB" (m, g, t; MiB, GiB,
// TiB), decimal in upper case or with "B" (M, G, T; MB, GB, TB); no unit
// is MiB. Fractions of a MiB are dropped.
func ParseUnit(s string) (int64, error) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || i == 0 && s[i] == '-') {
		i++
	}
	v, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("can't parse string '%s'", s)
	}
	unit := strings.TrimLeft(s[i:], " ")
	const dec = 1000.0 / 1024.0 // a decimal kilo in binary kilos
	var scale float64
	switch up := strings.ToUpper(unit); {
	case unit == "", unit == "m", up == "MIB":
		scale = 1
	case unit == "g", up == "GIB":
		scale = 1024
	case unit == "t", up == "TIB":
		scale = 1024 * 1024
	case unit == "M", up == "MB":
		scale = dec * dec
	case unit == "G", up == "GB":
		scale = dec * dec * 1000
	case unit == "T", up == "TB":
		scale = dec * dec * 1000 * 1000
	default:
		return 0, fmt.Errorf("unknown unit '%s'", unit)
	}
	return int64(float64(v) * scale), nil
}
