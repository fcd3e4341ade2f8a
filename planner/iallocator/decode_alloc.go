package iallocator

import (
	"encoding/json"
	"fmt"

	"github.com/drovehq/drove/planner"
)

// This file decodes the requests that create or re-home one instance:
// allocate, multi-allocate and relocate. Their fields are Ganeti's
// (lib/masterd/iallocator.py): an allocate request carries the new
// instance itself (name, memory, vcpus, disks, nics, disk_template, tags,
// spindle_use, required_nodes, and optionally group_name and
// restrict-to-nodes); multi-allocate a list of them under "instances";
// relocate names an existing instance, required_nodes and relocate_from.

// decodeAllocate reads an allocate request.
func decodeAllocate(obj *object, c *planner.Cluster) (planner.Request, error) {
	r := planner.Request{Kind: planner.Allocate}
	ni, err := decodeNewInstance(obj, "")
	if err != nil {
		return r, err
	}
	r.New = []planner.NewInstance{ni}
	return r, checkNewNames(r.New, c, []string{"request"})
}

// decodeMultiAllocate reads a multi-allocate request. Hail reads each
// instance's group_name from the outer request; Drove reads the instance's
// own, falling back to the outer one.
func decodeMultiAllocate(obj *object, c *planner.Cluster) (planner.Request, error) {
	r := planner.Request{Kind: planner.MultiAllocate}
	var outer string
	if v, ok := obj.get("group_name"); ok {
		if err := decodeInto(v, "request.group_name", &outer); err != nil {
			return r, err
		}
	}
	var list []json.RawMessage
	if err := obj.required("instances", &list); err != nil {
		return r, err
	}
	if len(list) == 0 {
		return r, fieldErr("request.instances", "empty list")
	}
	var paths []string
	for i, raw := range list {
		path := fmt.Sprintf("request.instances[%d]", i)
		o, err := objectOf(raw, path)
		if err != nil {
			return r, err
		}
		ni, err := decodeNewInstance(o, outer)
		if err != nil {
			return r, err
		}
		r.New = append(r.New, ni)
		paths = append(paths, path)
	}
	return r, checkNewNames(r.New, c, paths)
}

// checkNewNames refuses groups the cluster does not have. A new instance
// named like an existing one is accepted, as hail accepts it (Ganeti's own
// test data has one): the planner tells them apart by index.
func checkNewNames(news []planner.NewInstance, c *planner.Cluster, paths []string) error {
	for i, ni := range news {
		if ni.Group != "" && c.GroupIndex(ni.Group) < 0 {
			return fieldErr(paths[i]+".group_name", fmt.Sprintf("unknown node group %q", ni.Group))
		}
	}
	return nil
}

// decodeNewInstance reads one instance to create from obj.
func decodeNewInstance(obj *object, group string) (planner.NewInstance, error) {
	ni := planner.NewInstance{Group: group}
	in := &ni.Instance
	in.State, in.Primary, in.Secondary = planner.Up, planner.NoNode, planner.NoNode
	var req float64
	nums := []struct {
		key string
		dst *int64
	}{{"memory", &in.Memory}, {"vcpus", &in.VCPUs}, {"disk_space_total", &in.DiskSpace}, {"spindle_use", &in.SpindleUse}}
	var kind string
	for _, f := range []struct {
		key string
		dst any
	}{{"name", &in.Name}, {"required_nodes", &req}, {"disk_template", &kind}, {"tags", &in.Tags}} {
		if err := obj.required(f.key, f.dst); err != nil {
			return ni, err
		}
	}
	for _, f := range nums {
		var v float64
		if err := obj.required(f.key, &v); err != nil {
			return ni, err
		}
		if err := wholeCount(v, obj.sub(f.key), f.dst); err != nil {
			return ni, err
		}
	}
	var rn int64
	if err := wholeCount(req, obj.sub("required_nodes"), &rn); err != nil {
		return ni, err
	}
	ni.RequiredNodes = int(rn)
	in.Storage = planner.StorageKind(kind)
	if !in.Storage.Known() {
		return ni, fieldErr(obj.sub("disk_template"), fmt.Sprintf("unknown storage kind %q", kind))
	}
	if want := planner.NodesFor(in.Storage); ni.RequiredNodes != want {
		return ni, fieldErr(obj.sub("required_nodes"), fmt.Sprintf("storage kind %q needs %d node(s), got %d", kind, want, ni.RequiredNodes))
	}
	if err := decodeNewDisks(obj, in); err != nil {
		return ni, err
	}
	if err := decodeNewNICs(obj, &ni); err != nil {
		return ni, err
	}
	if err := decodeOptionalNew(obj, &ni); err != nil {
		return ni, err
	}
	return ni, nil
}

// decodeOptionalNew reads the optional members of a new instance.
func decodeOptionalNew(obj *object, ni *planner.NewInstance) error {
	if v, ok := obj.get("group_name"); ok {
		if err := decodeInto(v, obj.sub("group_name"), &ni.Group); err != nil {
			return err
		}
	}
	if v, ok := obj.get("restrict-to-nodes"); ok {
		if err := decodeInto(v, obj.sub("restrict-to-nodes"), &ni.RestrictToNodes); err != nil {
			return err
		}
	}
	if v, ok := obj.get("admin_state"); ok {
		var st string
		if err := decodeInto(v, obj.sub("admin_state"), &st); err != nil {
			return err
		}
		ni.Instance.State = planner.RunState(st)
		if st != "up" && st != "down" && st != "offline" {
			return fieldErr(obj.sub("admin_state"), fmt.Sprintf("%q is not one of up, down, offline", st))
		}
	}
	return nil
}

// wireDisk is one disk of a new instance.
type wireDisk struct {
	Size     *float64 `json:"size"`
	Spindles *float64 `json:"spindles"`
}

func decodeNewDisks(obj *object, in *planner.Instance) error {
	var disks []wireDisk
	if err := obj.required("disks", &disks); err != nil {
		return err
	}
	for i, d := range disks {
		path := fmt.Sprintf("%s[%d]", obj.sub("disks"), i)
		if d.Size == nil {
			return fieldErr(path+".size", "missing")
		}
		disk := planner.Disk{}
		if err := wholeCount(*d.Size, path+".size", &disk.Size); err != nil {
			return err
		}
		if d.Spindles != nil {
			if err := wholeCount(*d.Spindles, path+".spindles", &disk.Spindles); err != nil {
				return err
			}
		}
		in.Disks = append(in.Disks, disk)
	}
	return nil
}

// wireNIC is one NIC of a new instance: only its network matters.
type wireNIC struct {
	Network *string `json:"network"`
}

func decodeNewNICs(obj *object, ni *planner.NewInstance) error {
	var nics []wireNIC
	if err := obj.required("nics", &nics); err != nil {
		return err
	}
	ni.Instance.NICs = int64(len(nics))
	for _, n := range nics {
		if n.Network != nil && *n.Network != "" {
			ni.Networks = append(ni.Networks, *n.Network)
		}
	}
	return nil
}

// wholeCount takes a JSON number as a non-negative count.
func wholeCount(v float64, path string, dst *int64) error {
	if v != v || v < 0 || v > 1<<53 {
		return fieldErr(path, "must be a non-negative number")
	}
	*dst = int64(v)
	return nil
}

// decodeRelocate reads a relocate request.
func decodeRelocate(obj *object, c *planner.Cluster) (planner.Request, error) {
	r := planner.Request{Kind: planner.Relocate}
	var name string
	var req float64
	if err := obj.required("name", &name); err != nil {
		return r, err
	}
	if c.InstanceIndex(name) < 0 {
		return r, fieldErr("request.name", fmt.Sprintf("unknown instance %q", name))
	}
	if err := obj.required("required_nodes", &req); err != nil {
		return r, err
	}
	var rn int64
	if err := wholeCount(req, "request.required_nodes", &rn); err != nil {
		return r, err
	}
	if err := obj.required("relocate_from", &r.RelocateFrom); err != nil {
		return r, err
	}
	for i, n := range r.RelocateFrom {
		if c.NodeIndex(n) < 0 {
			return r, fieldErr(fmt.Sprintf("request.relocate_from[%d]", i), fmt.Sprintf("unknown node %q", n))
		}
	}
	r.Instances, r.RequiredNodes = []string{name}, int(rn)
	return r, nil
}
