package iallocator

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/drovehq/drove/planner"
)

// EncodeRequest writes a cluster and a request as an IAllocator request
// document that Ganeti's hail accepts, keeping the order of groups, nodes
// and instances. Drove uses it to import clusters and to benchmark against
// hail on the same input.
func EncodeRequest(c *planner.Cluster, r planner.Request) ([]byte, error) {
	var b bytes.Buffer
	w := &orderedWriter{b: &b}
	hv := "xen-pvm"
	if c.StaticNodeMemory > 0 {
		hv = "kvm"
	}
	tags := c.Tags
	if tags == nil {
		tags = []string{}
	}
	w.open()
	w.kv("cluster_name", c.Name)
	w.kv("cluster_tags", tags)
	w.kv("enabled_hypervisors", []string{hv})
	w.kv("ipolicy", wirePolicyOf(c.Policy))
	w.key("nodegroups")
	w.open()
	for _, g := range c.Groups {
		gt := g.Tags
		if gt == nil {
			gt = []string{}
		}
		w.kv(g.UUID, map[string]any{"name": g.Name, "alloc_policy": string(g.AllocPolicy),
			"networks": nonNil(g.Networks), "ipolicy": wirePolicyOf(g.Policy), "tags": gt})
	}
	w.close()
	w.key("nodes")
	w.open()
	for _, n := range c.Nodes {
		nt := n.Tags
		if nt == nil {
			nt = []string{}
		}
		spindles := n.TotalSpindles
		w.kv(n.Name, map[string]any{
			"total_memory": n.TotalMemory, "reserved_memory": n.ReservedMemory,
			"free_memory": n.FreeMemory, "total_disk": n.TotalDisk, "free_disk": n.FreeDisk,
			"total_cpus": n.TotalCPUs, "reserved_cpus": n.ReservedCPUs,
			"total_spindles": spindles, "free_spindles": n.FreeSpindles,
			"offline": n.Offline, "drained": n.Drained, "vm_capable": n.VMCapable,
			"master_candidate": true, "master_capable": true,
			"group": c.Groups[n.Group].UUID, "tags": nt,
			"ndparams": map[string]any{"spindle_count": spindles, "exclusive_storage": n.ExclusiveStorage},
		})
	}
	w.close()
	w.key("instances")
	w.open()
	for _, in := range c.Instances {
		w.kv(in.Name, instanceObject(c, in, hv))
	}
	w.close()
	req := map[string]any{"type": string(r.Kind), "instances": nonNil(r.Instances)}
	if f := requestFields(c, r, hv); f != nil {
		req = f
	}
	switch r.Kind {
	case planner.NodeEvacuate:
		req["evac_mode"] = string(r.Mode)
		if len(r.EvacuatedNodes) > 0 {
			req["evacuate_nodes"] = r.EvacuatedNodes
		}
	case planner.ChangeGroup:
		req["target_groups"] = nonNil(r.TargetGroups)
	}
	w.kv("request", req)
	w.kv("version", 2)
	w.close()
	if w.err != nil {
		return nil, w.err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// diskObjects are an instance's disks as hail's input lists them.
func diskObjects(ds []planner.Disk) []map[string]any {
	disks := make([]map[string]any, 0, len(ds))
	for _, d := range ds {
		disk := map[string]any{"size": d.Size, "mode": "rw"}
		if d.Spindles > 0 {
			disk["spindles"] = d.Spindles
		}
		disks = append(disks, disk)
	}
	return disks
}

// instanceObject is an instance as Ganeti's IAllocator input states it.
func instanceObject(c *planner.Cluster, in planner.Instance, hv string) map[string]any {
	nodes := []string{c.Nodes[in.Primary].Name}
	if in.Secondary != planner.NoNode {
		nodes = append(nodes, c.Nodes[in.Secondary].Name)
	}
	disks := diskObjects(in.Disks)
	nics := make([]map[string]any, in.NICs)
	for i := range nics {
		nics[i] = map[string]any{"mac": fmt.Sprintf("aa:00:00:%02x:%02x:%02x", (i>>16)&255, (i>>8)&255, i&255),
			"ip": nil, "mode": "bridged", "link": "br0", "bridge": "br0"}
	}
	it := in.Tags
	if it == nil {
		it = []string{}
	}
	obj := map[string]any{
		"memory": in.Memory, "vcpus": in.VCPUs, "disk_space_total": in.DiskSpace,
		"disks": disks, "nics": nics, "tags": it, "spindle_use": in.SpindleUse,
		"disk_template": string(in.Storage), "admin_state": string(in.State),
		"admin_state_source": "admin", "hypervisor": hv, "os": "debian-image", "nodes": nodes,
	}
	if in.Owner != "" {
		obj["owner"] = in.Owner
	}
	return obj
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func wirePolicyOf(p planner.IPolicy) map[string]any {
	kinds := make([]string, 0, len(p.DiskTemplates))
	for _, k := range p.DiskTemplates {
		kinds = append(kinds, string(k))
	}
	mm := p.MinMax
	if mm == nil {
		mm = []planner.MinMax{}
	}
	return map[string]any{"minmax": mm, "std": p.Std, "disk-templates": kinds,
		"vcpu-ratio": p.VCPURatio, "spindle-ratio": p.SpindleRatio}
}

// orderedWriter writes JSON objects whose key order matters.
type orderedWriter struct {
	b     *bytes.Buffer
	first []bool
	err   error
}

func (w *orderedWriter) open() {
	w.b.WriteByte('{')
	w.first = append(w.first, true)
}

func (w *orderedWriter) close() {
	w.b.WriteByte('}')
	w.first = w.first[:len(w.first)-1]
}

func (w *orderedWriter) key(k string) {
	if !w.first[len(w.first)-1] {
		w.b.WriteByte(',')
	}
	w.first[len(w.first)-1] = false
	kb, _ := json.Marshal(k)
	w.b.Write(kb)
	w.b.WriteByte(':')
}

func (w *orderedWriter) kv(k string, v any) {
	w.key(k)
	vb, err := json.Marshal(v)
	if err != nil && w.err == nil {
		w.err = err
	}
	w.b.Write(vb)
}
