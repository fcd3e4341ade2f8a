package hailcli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/drovehq/drove/planner"
)

// ganetiRunState names a run state as htools' instance status does, so
// that a verbose run reads like hail's ("runSt = StatusDown").
var ganetiRunState = map[planner.RunState]string{planner.Up: "Running", planner.Down: "StatusDown", planner.Offline: "StatusOffline"}

// describeRequest is what verbose runs print about the request and the
// cluster it was read with.
func describeRequest(c *planner.Cluster, r planner.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", r.Kind)
	if len(r.Instances) > 0 {
		fmt.Fprintf(&b, " of %s", strings.Join(r.Instances, ", "))
	}
	if r.Mode != "" {
		fmt.Fprintf(&b, ", mode %s", r.Mode)
	}
	if len(r.TargetGroups) > 0 {
		fmt.Fprintf(&b, ", to groups %s", strings.Join(r.TargetGroups, ", "))
	}
	for _, ni := range r.New {
		fmt.Fprintf(&b, "; new %s", describeInstance(c, &ni.Instance))
	}
	fmt.Fprintf(&b, "\nReceived cluster: %d groups, %d nodes, %d instances:", len(c.Groups), len(c.Nodes), len(c.Instances))
	for i := range c.Instances {
		fmt.Fprintf(&b, "\n  %s", describeInstance(c, &c.Instances[i]))
	}
	return b.String()
}

func describeInstance(c *planner.Cluster, in *planner.Instance) string {
	nodes := "unplaced"
	if in.Primary >= 0 && in.Primary < len(c.Nodes) {
		nodes = c.Nodes[in.Primary].Name
		if in.Secondary >= 0 && in.Secondary < len(c.Nodes) {
			nodes += "/" + c.Nodes[in.Secondary].Name
		}
	}
	st, ok := ganetiRunState[in.State]
	if !ok {
		st = string(in.State)
	}
	return fmt.Sprintf("Instance {name = %q, mem = %d, dsk = %d, vcpus = %d, runSt = %s, nodes = %s, diskTemplate = %s}",
		in.Name, in.Memory, in.DiskSpace, in.VCPUs, st, nodes, in.Storage)
}

// nodeColumns are the columns -p can list, hail's names; the default is
// the first nine.
var nodeColumns = []struct {
	name string
	val  func(c *planner.Cluster, i int, use [2]int) string
}{
	{"name", func(c *planner.Cluster, i int, _ [2]int) string { return c.Nodes[i].Name }},
	{"t_mem", func(c *planner.Cluster, i int, _ [2]int) string { return fmt.Sprint(c.Nodes[i].TotalMemory) }},
	{"n_mem", func(c *planner.Cluster, i int, _ [2]int) string { return fmt.Sprint(c.Nodes[i].ReservedMemory) }},
	{"f_mem", func(c *planner.Cluster, i int, _ [2]int) string { return fmt.Sprint(c.Nodes[i].FreeMemory) }},
	{"t_dsk", func(c *planner.Cluster, i int, _ [2]int) string { return fmt.Sprint(c.Nodes[i].TotalDisk) }},
	{"f_dsk", func(c *planner.Cluster, i int, _ [2]int) string { return fmt.Sprint(c.Nodes[i].FreeDisk) }},
	{"pcpu", func(c *planner.Cluster, i int, _ [2]int) string { return fmt.Sprint(c.Nodes[i].TotalCPUs) }},
	{"pcnt", func(_ *planner.Cluster, _ int, u [2]int) string { return fmt.Sprint(u[0]) }},
	{"scnt", func(_ *planner.Cluster, _ int, u [2]int) string { return fmt.Sprint(u[1]) }},
	{"group", func(c *planner.Cluster, i int, _ [2]int) string { return c.Groups[c.Nodes[i].Group].Name }},
	{"offline", func(c *planner.Cluster, i int, _ [2]int) string { return fmt.Sprint(c.Nodes[i].Offline) }},
}

// nodeTable lists the nodes, one a line, with the columns asked for (all
// of hail's names Drove knows; unknown names are skipped).
func nodeTable(c *planner.Cluster, fields []string) string {
	cols := nodeColumns[:9]
	if len(fields) > 0 {
		cols = nil
		for _, f := range fields {
			for _, col := range nodeColumns {
				if col.name == f {
					cols = append(cols, col)
				}
			}
		}
	}
	use := make([][2]int, len(c.Nodes))
	for _, in := range c.Instances {
		if in.Primary >= 0 {
			use[in.Primary][0]++
		}
		if in.Secondary >= 0 {
			use[in.Secondary][1]++
		}
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 1, ' ', tabwriter.AlignRight)
	for _, col := range cols {
		fmt.Fprintf(w, "%s\t", col.name)
	}
	fmt.Fprintln(w)
	for i := range c.Nodes {
		for _, col := range cols {
			fmt.Fprintf(w, "%s\t", col.val(c, i, use[i]))
		}
		fmt.Fprintln(w)
	}
	w.Flush()
	return b.String()
}
