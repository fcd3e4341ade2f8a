package iallocator

import (
	"fmt"

	"github.com/drovehq/drove/planner"
)

// EncodeAnswer renders a plan as Ganeti's answer to a request of kind k:
//   - node-evacuate, change-group: [moved, failed, jobs] (EncodeResult);
//   - allocate: the chosen nodes, primary first, or success=false with the
//     reason;
//   - multi-allocate: [[[name, [nodes]], ...], [name, ...]] (the failed);
//   - relocate: the node that replaces the one left, or success=false;
//   - allocate-secondary: the new secondary's name (a string), or
//     success=false.
func EncodeAnswer(k planner.RequestKind, p *planner.Plan) ([]byte, error) {
	switch k {
	case planner.Allocate:
		if len(p.Allocated) == 1 {
			return marshal(response{Success: true, Info: "Request successful: " + p.Allocated[0].Hail, Result: nonNil(p.Allocated[0].Nodes)})
		}
		return marshal(response{Success: false, Info: "Request failed: " + failReason(p), Result: []any{}})
	case planner.MultiAllocate:
		done := make([]any, 0, len(p.Allocated))
		for _, a := range p.Allocated {
			done = append(done, []any{a.Instance, nonNil(a.Nodes)})
		}
		// Ganeti's master accepts only names in the failed list
		// (lib/masterd/iallocator.py); why each failed is Drove's
		// explanation (Explain), not the answer's.
		failed := make([]string, 0, len(p.Failed))
		for _, f := range p.Failed {
			failed = append(failed, f.Instance)
		}
		info := fmt.Sprintf("Request successful: %d instances failed to allocate and %d were allocated successfully",
			len(p.Failed), len(p.Allocated))
		return marshal(response{Success: true, Info: info, Result: []any{done, failed}})
	case planner.AllocateSecondary:
		if len(p.Relocated) > 0 {
			return marshal(response{Success: true, Info: "Request successful: " + p.Hail, Result: p.Relocated[0]})
		}
		return marshal(response{Success: false, Info: "Request failed: " + failReason(p), Result: []any{}})
	case planner.Relocate:
		if len(p.Relocated) > 0 {
			return marshal(response{Success: true, Info: "Request successful: success", Result: p.Relocated})
		}
		return marshal(response{Success: false, Info: "Request failed: " + failReason(p), Result: []any{}})
	}
	return EncodeResult(p)
}

func failReason(p *planner.Plan) string {
	if len(p.Failed) == 0 {
		return "no answer"
	}
	return hailReason(p.Failed[0])
}

// requestFields renders the request part of an allocate, multi-allocate or
// relocate document, as Ganeti writes it.
func requestFields(c *planner.Cluster, r planner.Request, hv string) map[string]any {
	switch r.Kind {
	case planner.Allocate:
		req := newInstanceFields(r.New[0], hv)
		req["type"] = string(r.Kind)
		return req
	case planner.MultiAllocate:
		list := make([]map[string]any, 0, len(r.New))
		for _, ni := range r.New {
			list = append(list, newInstanceFields(ni, hv))
		}
		return map[string]any{"type": string(r.Kind), "instances": list}
	case planner.AllocateSecondary:
		return map[string]any{"type": string(r.Kind), "name": r.Instances[0]}
	case planner.Relocate:
		var dsk int64
		if len(r.Instances) > 0 {
			if i := c.InstanceIndex(r.Instances[0]); i >= 0 {
				dsk = c.Instances[i].DiskSpace
			}
			return map[string]any{"type": string(r.Kind), "name": r.Instances[0], "required_nodes": r.RequiredNodes,
				"relocate_from": nonNil(r.RelocateFrom), "disk_space_total": dsk}
		}
	}
	return nil
}

func newInstanceFields(ni planner.NewInstance, hv string) map[string]any {
	in := ni.Instance
	disks := diskObjects(in.Disks)
	nics := make([]map[string]any, in.NICs)
	for i := range nics {
		nics[i] = map[string]any{"mac": fmt.Sprintf("aa:00:01:%02x:%02x:%02x", (i>>16)&255, (i>>8)&255, i&255), "ip": nil, "bridge": nil}
		if i < len(ni.Networks) {
			nics[i]["network"] = ni.Networks[i]
		}
	}
	obj := map[string]any{"name": in.Name, "disk_template": string(in.Storage), "memory": in.Memory,
		"vcpus": in.VCPUs, "disk_space_total": in.DiskSpace, "disks": disks, "nics": nics,
		"tags": nonNil(in.Tags), "spindle_use": in.SpindleUse, "required_nodes": ni.RequiredNodes,
		"os": "debian-image", "hypervisor": hv}
	if ni.Group != "" {
		obj["group_name"] = ni.Group
	}
	if len(ni.RestrictToNodes) > 0 {
		obj["restrict-to-nodes"] = ni.RestrictToNodes
	}
	return obj
}
