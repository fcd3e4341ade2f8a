package htoolsdata

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/drovehq/drove/planner"
)

// Parse reads Ganeti's text backend: sections separated by an empty line,
// in order groups, nodes, instances, cluster tags and (optionally)
// instance policies, one record a line, fields separated by "|". Records
// written by older Ganeti, with fewer trailing fields, take Ganeti's
// defaults for the missing ones.
func Parse(data []byte) (*planner.Cluster, error) {
	sections := splitSections(string(data))
	if len(sections) < 4 {
		return nil, fmt.Errorf("invalid format of the input file: %d sections instead of 4 or more", len(sections))
	}
	c := &planner.Cluster{Policy: planner.DefaultIPolicy()}
	for _, line := range sections[0] {
		if err := parseGroup(c, strings.Split(line, "|")); err != nil {
			return nil, err
		}
	}
	for _, line := range sections[1] {
		if err := parseNode(c, strings.Split(line, "|")); err != nil {
			return nil, err
		}
	}
	for _, line := range sections[2] {
		if err := parseInstance(c, strings.Split(line, "|")); err != nil {
			return nil, err
		}
	}
	c.Tags = append(c.Tags, sections[3]...)
	if len(sections) > 4 {
		for _, line := range sections[4] {
			if err := parsePolicyLine(c, strings.Split(line, "|")); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// splitSections splits the lines at empty lines, as Ganeti does: two
// empty lines in a row make an empty section.
func splitSections(s string) [][]string {
	lines := strings.Split(s, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the final newline ends the last line
	}
	out := [][]string{{}}
	for _, l := range lines {
		if l == "" {
			out = append(out, []string{})
			continue
		}
		out[len(out)-1] = append(out[len(out)-1], l)
	}
	return out
}

// pad extends a record written by an older Ganeti with the defaults of
// the fields it lacks (defaults[i] is field min+i).
func pad(f []string, min int, defaults ...string) ([]string, bool) {
	if len(f) < min {
		return f, false
	}
	for i := len(f) - min; i < len(defaults); i++ {
		f = append(f, defaults[i])
	}
	return f, true
}

// parseGroup reads name|uuid|alloc_policy|tags[|networks].
func parseGroup(c *planner.Cluster, f []string) error {
	f, ok := pad(f, 4, "")
	if !ok {
		return fmt.Errorf("invalid/incomplete group data: %q", f)
	}
	p := planner.AllocPolicy(f[2])
	if !p.Valid() {
		return fmt.Errorf("group %s: invalid allocation policy %q", f[0], f[2])
	}
	c.Groups = append(c.Groups, planner.Group{UUID: f[1], Name: f[0], AllocPolicy: p,
		Policy: planner.DefaultIPolicy(), Tags: commaSplit(f[3]), Networks: commaSplit(f[4])})
	return nil
}

// parseNode reads name|t_mem|n_mem|f_mem|t_dsk|f_dsk|t_cpu|flag|group
// uuid|spindles|tags|exclusive storage|free spindles|reserved cpus|cpu
// speed, where flag is Y (offline), M (master) or N. A node whose numbers
// are "?" is offline, as in Ganeti.
func parseNode(c *planner.Cluster, f []string) error {
	f, ok := pad(f, 9, "1", "", "N", "0", "1", "1.0")
	if !ok {
		return fmt.Errorf("invalid/incomplete node data: %q", f)
	}
	g := c.GroupIndex(f[8])
	if g < 0 || c.Groups[g].UUID != f[8] {
		return fmt.Errorf("node %s: unknown group uuid %q", f[0], f[8])
	}
	n := planner.Node{Name: f[0], Group: g, VMCapable: true, Offline: f[7] == "Y"}
	for _, v := range f[1:7] {
		if v == "?" {
			n.Offline = true
			c.Nodes = append(c.Nodes, n)
			return nil
		}
	}
	nums := []*int64{&n.TotalMemory, &n.ReservedMemory, &n.FreeMemory, &n.TotalDisk, &n.FreeDisk, &n.TotalCPUs}
	fields := append(append([]string{}, f[1:7]...), f[9], f[12], f[13])
	nums = append(nums, &n.TotalSpindles, &n.FreeSpindles, &n.ReservedCPUs)
	for i, v := range fields {
		x, err := number(v)
		if err != nil {
			return fmt.Errorf("node %s: %v", f[0], err)
		}
		*nums[i] = x
	}
	switch f[11] {
	case "Y":
		n.ExclusiveStorage = true
	case "N":
	default:
		return fmt.Errorf("invalid exclusive_storage value for node '%s': %s", f[0], f[11])
	}
	n.Tags = commaSplit(f[10])
	c.Nodes = append(c.Nodes, n)
	return nil
}

// number reads Ganeti's numbers: integers, or the total values hspace
// writes with "%.0f".
func number(s string) (int64, error) {
	if x, err := strconv.ParseInt(s, 10, 64); err == nil {
		return x, nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("cannot parse %q as a number", s)
	}
	return int64(x), nil
}

// instanceStates maps Ganeti's instance statuses to Drove's run states:
// Ganeti counts an instance as running when it is running or in ERROR_up.
var instanceStates = map[string]planner.RunState{
	"running": planner.Up, "ERROR_up": planner.Up,
	"ADMIN_down": planner.Down, "ERROR_down": planner.Down, "ERROR_nodedown": planner.Down,
	"ERROR_nodeoffline": planner.Down, "ERROR_wrongnode": planner.Down, "USER_down": planner.Down,
	"ADMIN_offline": planner.Offline,
}

// parseInstance reads name|mem|dsk|vcpus|status|auto_balance|pnode|
// snode|disk template|tags|spindle use|spindles|forthcoming.
func parseInstance(c *planner.Cluster, f []string) error {
	f, ok := pad(f, 10, "1", "-", "N")
	if !ok {
		return fmt.Errorf("invalid/incomplete instance data: %q", f)
	}
	in := planner.Instance{Name: f[0], Storage: planner.StorageKind(f[8]), Tags: commaSplit(f[9]), Secondary: planner.NoNode}
	for i, dst := range []*int64{&in.Memory, &in.DiskSpace, &in.VCPUs, &in.SpindleUse} {
		v := []string{f[1], f[2], f[3], f[10]}[i]
		x, err := number(v)
		if err != nil {
			return fmt.Errorf("instance %s: %v", f[0], err)
		}
		*dst = x
	}
	st, ok := instanceStates[f[4]]
	if !ok {
		return fmt.Errorf("instance %s: unknown status %q", f[0], f[4])
	}
	in.State = st
	if !in.Storage.Known() {
		return fmt.Errorf("instance %s: unknown disk template %q", f[0], f[8])
	}
	disk := planner.Disk{Size: in.DiskSpace}
	if f[11] != "-" {
		x, err := number(f[11])
		if err != nil {
			return fmt.Errorf("instance %s: %v", f[0], err)
		}
		disk.Spindles = x
	}
	in.Disks = []planner.Disk{disk}
	if in.Primary = c.NodeIndex(f[6]); in.Primary < 0 {
		return fmt.Errorf("instance %s: unknown primary node %q", f[0], f[6])
	}
	if f[7] != "" {
		if in.Secondary = c.NodeIndex(f[7]); in.Secondary < 0 {
			return fmt.Errorf("instance %s: unknown secondary node %q", f[0], f[7])
		}
		if in.Secondary == in.Primary {
			return fmt.Errorf("instance %s has same primary and secondary node - %s", f[0], f[6])
		}
	}
	c.Instances = append(c.Instances, in)
	return nil
}

func commaSplit(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
