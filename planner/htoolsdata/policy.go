package htoolsdata

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/drovehq/drove/planner"
)

// parsePolicyLine reads owner|std|min;max[;min;max...]|disk templates|
// vcpu ratio|spindle ratio. The owner is a group's name, or empty for the
// cluster's policy. An instance spec is memory,cpus,disk size,disk count,
// nic count,spindle use.
func parsePolicyLine(c *planner.Cluster, f []string) error {
	if len(f) < 6 {
		return fmt.Errorf("invalid ipolicy data: %q", f)
	}
	owner := f[0]
	var p planner.IPolicy
	var err error
	if p.Std, err = parseISpec(owner+"/stdspec", f[1]); err != nil {
		return err
	}
	specs := strings.Split(f[2], ";")
	if len(specs)%2 != 0 {
		return fmt.Errorf("odd number of min/max specs for %s", owner)
	}
	for i := 0; i+1 < len(specs); i += 2 {
		var mm planner.MinMax
		if mm.Min, err = parseISpec(owner+"/minspec", specs[i]); err != nil {
			return err
		}
		if mm.Max, err = parseISpec(owner+"/maxspec", specs[i+1]); err != nil {
			return err
		}
		p.MinMax = append(p.MinMax, mm)
	}
	for _, t := range commaSplit(f[3]) {
		p.DiskTemplates = append(p.DiskTemplates, planner.StorageKind(t))
	}
	if p.VCPURatio, err = strconv.ParseFloat(f[4], 64); err != nil {
		return fmt.Errorf("%s/vcpu_ratio: %v", owner, err)
	}
	if p.SpindleRatio, err = strconv.ParseFloat(f[5], 64); err != nil {
		return fmt.Errorf("%s/spindle_ratio: %v", owner, err)
	}
	if owner == "" {
		c.Policy = p
		return nil
	}
	for g := range c.Groups {
		if c.Groups[g].Name == owner {
			c.Groups[g].Policy = p
			return nil
		}
	}
	return fmt.Errorf("ipolicy for unknown group %q", owner)
}

func parseISpec(owner, s string) (planner.ISpec, error) {
	var sp planner.ISpec
	f := strings.Split(s, ",")
	if len(f) < 6 {
		return sp, fmt.Errorf("invalid ispec data for %s: %q", owner, f)
	}
	for i, dst := range []*int64{&sp.MemorySize, &sp.CPUCount, &sp.DiskSize, &sp.DiskCount, &sp.NICCount, &sp.SpindleUse} {
		x, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return sp, fmt.Errorf("%s: %v", owner, err)
		}
		*dst = x
	}
	return sp, nil
}

func formatISpec(s planner.ISpec) string {
	return fmt.Sprintf("%d,%d,%d,%d,%d,%d", s.MemorySize, s.CPUCount, s.DiskSize, s.DiskCount, s.NICCount, s.SpindleUse)
}

func formatPolicy(owner string, p planner.IPolicy) string {
	var mm []string
	for _, m := range p.MinMax {
		mm = append(mm, formatISpec(m.Min), formatISpec(m.Max))
	}
	var dts []string
	for _, t := range p.DiskTemplates {
		dts = append(dts, string(t))
	}
	return strings.Join([]string{owner, formatISpec(p.Std), strings.Join(mm, ";"), strings.Join(dts, ","),
		formatFloat(p.VCPURatio), formatFloat(p.SpindleRatio)}, "|")
}

// formatFloat writes a ratio so that Ganeti reads it back: always with a
// decimal point.
func formatFloat(x float64) string {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}
