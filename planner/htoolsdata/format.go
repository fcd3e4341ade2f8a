package htoolsdata

import (
	"fmt"
	"strings"

	"github.com/drovehq/drove/planner"
)

// Format writes c in Ganeti's text backend, as hspace -S and hail -S do:
// groups, nodes, instances, cluster tags and instance policies (the
// cluster's, then each group's), sections separated by an empty line.
// Parse reads it back to the same cluster, less what the format does not
// carry (a node's drained flag, disks beyond the first, NICs).
func Format(c *planner.Cluster) []byte {
	var b strings.Builder
	for _, g := range c.Groups {
		fmt.Fprintf(&b, "%s|%s|%s|%s|%s\n", g.Name, g.UUID, g.AllocPolicy, strings.Join(g.Tags, ","), strings.Join(g.Networks, ","))
	}
	b.WriteString("\n")
	for i := range c.Nodes {
		n := &c.Nodes[i]
		flag := "N"
		if n.Offline {
			flag = "Y"
		}
		excl := "N"
		if n.ExclusiveStorage {
			excl = "Y"
		}
		fmt.Fprintf(&b, "%s|%d|%d|%d|%d|%d|%d|%s|%s|%d|%s|%s|%d|%d|1.000000\n", n.Name, n.TotalMemory, n.ReservedMemory,
			n.FreeMemory, n.TotalDisk, n.FreeDisk, n.TotalCPUs, flag, c.Groups[n.Group].UUID, n.TotalSpindles,
			strings.Join(n.Tags, ","), excl, n.FreeSpindles, n.ReservedCPUs)
	}
	b.WriteString("\n")
	for i := range c.Instances {
		writeInstance(&b, c, &c.Instances[i])
	}
	b.WriteString("\n")
	for _, t := range c.Tags {
		b.WriteString(t + "\n")
	}
	b.WriteString("\n")
	b.WriteString(formatPolicy("", c.Policy) + "\n")
	for _, g := range c.Groups {
		b.WriteString(formatPolicy(g.Name, g.Policy) + "\n")
	}
	return []byte(b.String())
}

var statusNames = map[planner.RunState]string{planner.Up: "running", planner.Down: "ADMIN_down", planner.Offline: "ADMIN_offline"}

func writeInstance(b *strings.Builder, c *planner.Cluster, in *planner.Instance) {
	sec := ""
	if in.Secondary != planner.NoNode {
		sec = c.Nodes[in.Secondary].Name
	}
	spindles := "-"
	var sum int64
	for _, d := range in.Disks {
		sum += d.Spindles
	}
	if sum > 0 {
		spindles = fmt.Sprint(sum)
	}
	status, ok := statusNames[in.State]
	if !ok {
		status = "running"
	}
	fmt.Fprintf(b, "%s|%d|%d|%d|%s|Y|%s|%s|%s|%s|%d|%s|N\n", in.Name, in.Memory, in.DiskSpace, in.VCPUs, status,
		c.Nodes[in.Primary].Name, sec, in.Storage, strings.Join(in.Tags, ","), in.SpindleUse, spindles)
}
