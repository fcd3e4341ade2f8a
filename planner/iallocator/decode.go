package iallocator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/drovehq/drove/planner"
)

// Decode reads an IAllocator request: the cluster it describes and what it
// asks. Fields Drove does not use are ignored, as Ganeti sends many; a
// missing or mistyped field Drove needs is an error naming it, such as
// `nodes["node1"].total_memory: missing`.
func Decode(data []byte) (*planner.Cluster, planner.Request, error) {
	var req planner.Request
	top, err := objectOf(data, "")
	if err != nil {
		return nil, req, err
	}
	c, err := decodeCluster(top)
	if err != nil {
		return nil, req, err
	}
	rv, ok := top.get("request")
	if !ok {
		return nil, req, fieldErr("request", "missing")
	}
	req, err = decodeRequest(rv, c)
	if err != nil {
		return nil, req, err
	}
	return c, req, nil
}

// DecodeCluster reads only the cluster of a request document, whatever it
// asks; Drove uses it to import a Ganeti cluster's inventory.
func DecodeCluster(data []byte) (*planner.Cluster, error) {
	top, err := objectOf(data, "")
	if err != nil {
		return nil, err
	}
	return decodeCluster(top)
}

func decodeCluster(top *object) (*planner.Cluster, error) {
	var err error
	c := &planner.Cluster{Policy: planner.DefaultIPolicy()}
	if v, ok := top.get("cluster_name"); ok {
		if err := decodeInto(v, "cluster_name", &c.Name); err != nil {
			return nil, err
		}
	}
	if err := top.required("cluster_tags", &c.Tags); err != nil {
		return nil, err
	}
	if v, ok := top.get("ipolicy"); ok {
		if c.Policy, err = decodePolicy(v, "ipolicy"); err != nil {
			return nil, err
		}
	}
	var hvs []string
	if v, ok := top.get("enabled_hypervisors"); ok {
		if err := decodeInto(v, "enabled_hypervisors", &hvs); err != nil {
			return nil, err
		}
	}
	if len(hvs) > 0 && hvs[0] == "kvm" {
		// Ganeti's hail: KVM nodes under-report what the node itself
		// uses, so it assumes a static 4 GiB.
		c.StaticNodeMemory = 4096
	}

	groups, err := top.object("nodegroups")
	if err != nil {
		return nil, err
	}
	groupIdx := map[string]int{}
	for _, kv := range groups.fields {
		g, err := decodeGroup(kv.key, kv.value, c.Policy)
		if err != nil {
			return nil, err
		}
		groupIdx[kv.key] = len(c.Groups)
		c.Groups = append(c.Groups, g)
	}

	nodes, err := top.object("nodes")
	if err != nil {
		return nil, err
	}
	nodeIdx := map[string]int{}
	for _, kv := range nodes.fields {
		n, err := decodeNode(kv.key, kv.value, groupIdx)
		if err != nil {
			return nil, err
		}
		nodeIdx[kv.key] = len(c.Nodes)
		c.Nodes = append(c.Nodes, n)
	}

	insts, err := top.object("instances")
	if err != nil {
		return nil, err
	}
	for _, kv := range insts.fields {
		in, err := decodeInstance(kv.key, kv.value, nodeIdx)
		if err != nil {
			return nil, err
		}
		c.Instances = append(c.Instances, in)
	}

	return c, nil
}

func decodeRequest(data json.RawMessage, c *planner.Cluster) (planner.Request, error) {
	known := func(names []string) map[string]bool {
		m := make(map[string]bool, len(names))
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	var nodeNames, instNames []string
	for i := range c.Nodes {
		nodeNames = append(nodeNames, c.Nodes[i].Name)
	}
	for i := range c.Instances {
		instNames = append(instNames, c.Instances[i].Name)
	}
	nodes, insts := known(nodeNames), known(instNames)
	var r planner.Request
	obj, err := objectOf(data, "request")
	if err != nil {
		return r, err
	}
	var kind string
	if err := obj.required("type", &kind); err != nil {
		return r, err
	}
	r.Kind = planner.RequestKind(kind)
	switch r.Kind {
	case planner.NodeEvacuate:
		var mode string
		if err := obj.required("evac_mode", &mode); err != nil {
			return r, err
		}
		r.Mode = planner.EvacMode(mode)
		if !r.Mode.Valid() {
			return r, fieldErr("request.evac_mode", fmt.Sprintf("%q is not one of primary-only, secondary-only, all", mode))
		}
		if v, ok := obj.get("evacuate_nodes"); ok {
			if err := decodeInto(v, "request.evacuate_nodes", &r.EvacuatedNodes); err != nil {
				return r, err
			}
			for i, n := range r.EvacuatedNodes {
				if !nodes[n] {
					return r, fieldErr(fmt.Sprintf("request.evacuate_nodes[%d]", i), fmt.Sprintf("unknown node %q", n))
				}
			}
		}
	case planner.ChangeGroup:
		if err := obj.required("target_groups", &r.TargetGroups); err != nil {
			return r, err
		}
		for i, g := range r.TargetGroups {
			if c.GroupIndex(g) < 0 {
				return r, fieldErr(fmt.Sprintf("request.target_groups[%d]", i), fmt.Sprintf("unknown node group %q", g))
			}
		}
	case planner.Allocate:
		return decodeAllocate(obj, c)
	case planner.MultiAllocate:
		return decodeMultiAllocate(obj, c)
	case planner.Relocate:
		return decodeRelocate(obj, c)
	case planner.AllocateSecondary:
		var name string
		if err := obj.required("name", &name); err != nil {
			return r, err
		}
		if c.InstanceIndex(name) < 0 {
			return r, fieldErr("request.name", fmt.Sprintf("unknown instance %q", name))
		}
		r.Instances = []string{name}
		return r, nil
	default:
		return r, fieldErr("request.type", fmt.Sprintf("unknown request type %q (want node-evacuate, change-group, allocate, multi-allocate, relocate or allocate-secondary)", kind))
	}
	if err := obj.required("instances", &r.Instances); err != nil {
		return r, err
	}
	seen := map[string]bool{}
	for i, name := range r.Instances {
		if !insts[name] {
			return r, fieldErr(fmt.Sprintf("request.instances[%d]", i), fmt.Sprintf("unknown instance %q", name))
		}
		if seen[name] {
			return r, fieldErr(fmt.Sprintf("request.instances[%d]", i), fmt.Sprintf("instance %q is listed twice", name))
		}
		seen[name] = true
	}
	return r, nil
}

func decodeGroup(uuid string, data json.RawMessage, clusterPolicy planner.IPolicy) (planner.Group, error) {
	path := fmt.Sprintf("nodegroups[%q]", uuid)
	g := planner.Group{UUID: uuid, Policy: clusterPolicy}
	obj, err := objectOf(data, path)
	if err != nil {
		return g, err
	}
	var policy string
	if err := obj.required("name", &g.Name); err != nil {
		return g, err
	}
	if err := obj.required("alloc_policy", &policy); err != nil {
		return g, err
	}
	g.AllocPolicy = planner.AllocPolicy(policy)
	if !g.AllocPolicy.Valid() {
		return g, fieldErr(path+".alloc_policy", fmt.Sprintf("%q is not one of preferred, last_resort, unallocable", policy))
	}
	if v, ok := obj.get("tags"); ok {
		if err := decodeInto(v, path+".tags", &g.Tags); err != nil {
			return g, err
		}
	}
	if v, ok := obj.get("ipolicy"); ok {
		if g.Policy, err = decodePolicy(v, path+".ipolicy"); err != nil {
			return g, err
		}
	}
	if v, ok := obj.get("networks"); ok {
		if err := decodeInto(v, path+".networks", &g.Networks); err != nil {
			return g, err
		}
	}
	return g, nil
}

// wirePolicy is Ganeti's ipolicy; older Ganeti sends min and max instead of
// a minmax list.
type wirePolicy struct {
	MinMax        []planner.MinMax `json:"minmax"`
	Min           *planner.ISpec   `json:"min"`
	Max           *planner.ISpec   `json:"max"`
	Std           planner.ISpec    `json:"std"`
	DiskTemplates []string         `json:"disk-templates"`
	VCPURatio     *float64         `json:"vcpu-ratio"`
	SpindleRatio  *float64         `json:"spindle-ratio"`
}

func decodePolicy(data json.RawMessage, path string) (planner.IPolicy, error) {
	var w wirePolicy
	def := planner.DefaultIPolicy()
	if err := decodeInto(data, path, &w); err != nil {
		return def, err
	}
	p := planner.IPolicy{MinMax: w.MinMax, Std: w.Std, VCPURatio: def.VCPURatio, SpindleRatio: def.SpindleRatio}
	if len(p.MinMax) == 0 && w.Min != nil && w.Max != nil {
		p.MinMax = []planner.MinMax{{Min: *w.Min, Max: *w.Max}}
	}
	if w.VCPURatio != nil {
		p.VCPURatio = *w.VCPURatio
	}
	if w.SpindleRatio != nil {
		p.SpindleRatio = *w.SpindleRatio
	}
	if p.VCPURatio <= 0 || math.IsNaN(p.VCPURatio) {
		return p, fieldErr(path+".vcpu-ratio", fmt.Sprintf("must be positive, got %v", p.VCPURatio))
	}
	for _, t := range w.DiskTemplates {
		p.DiskTemplates = append(p.DiskTemplates, planner.StorageKind(t))
	}
	return p, nil
}

func decodeNode(name string, data json.RawMessage, groupIdx map[string]int) (planner.Node, error) {
	n := planner.Node{Name: name, VMCapable: true}
	var (
		offline, drained, group, nd, excl, spindleCount bool
		nums                                            [9]*int64
		have                                            [9]bool
		groupName                                       string
		spindles                                        int64
	)
	fields := [9]string{"total_memory", "reserved_memory", "free_memory", "total_disk", "free_disk",
		"total_cpus", "reserved_cpus", "free_spindles", "total_spindles"}
	nums = [9]*int64{&n.TotalMemory, &n.ReservedMemory, &n.FreeMemory, &n.TotalDisk, &n.FreeDisk,
		&n.TotalCPUs, &n.ReservedCPUs, &n.FreeSpindles, &n.TotalSpindles}
	sc := &scanner{b: data, coll: "nodes", key: name}
	err := sc.object("", func(key []byte) error {
		if sc.null() {
			return nil
		}
		var err error
		switch string(key) {
		case "offline":
			n.Offline, err = sc.boolean("offline")
			offline = true
		case "drained":
			n.Drained, err = sc.boolean("drained")
			drained = true
		case "group":
			groupName, err = sc.str("group")
			group = true
		case "vm_capable":
			n.VMCapable, err = sc.boolean("vm_capable")
		case "tags":
			n.Tags, err = sc.strings("tags")
		case "ndparams":
			nd = true
			err = sc.object("ndparams", func(key []byte) error {
				if sc.null() {
					return nil
				}
				var err error
				switch string(key) {
				case "exclusive_storage":
					n.ExclusiveStorage, err = sc.boolean("ndparams.exclusive_storage")
					excl = true
				case "spindle_count":
					spindles, err = sc.count("ndparams.spindle_count")
					spindleCount = true
				default:
					sc.skip()
				}
				return err
			})
		default:
			for k, f := range fields {
				if string(key) == f {
					*nums[k], err = sc.count(f)
					have[k] = true
					return err
				}
			}
			sc.skip()
		}
		return err
	})
	if err != nil {
		return n, err
	}
	switch {
	case !offline:
		return n, fieldErr(sc.path()+".offline", "missing")
	case !drained:
		return n, fieldErr(sc.path()+".drained", "missing")
	case !group:
		return n, fieldErr(sc.path()+".group", "missing")
	case !nd:
		return n, fieldErr(sc.path()+".ndparams", "missing")
	case !excl:
		return n, fieldErr(sc.path()+".ndparams.exclusive_storage", "missing")
	}
	g, ok := groupIdx[groupName]
	if !ok {
		return n, fieldErr(sc.path()+".group", fmt.Sprintf("unknown node group %q", groupName))
	}
	n.Group = g
	// Ganeti reads the capacity of live nodes only; dead ones count as empty.
	live := !n.Offline && n.VMCapable
	for k := 0; k < 8; k++ {
		if !have[k] && live {
			return n, fieldErr(sc.path()+"."+fields[k], "missing")
		}
	}
	if n.ExclusiveStorage {
		if !have[8] && live {
			return n, fieldErr(sc.path()+".total_spindles", "missing")
		}
	} else {
		if !spindleCount {
			return n, fieldErr(sc.path()+".ndparams.spindle_count", "missing")
		}
		n.TotalSpindles = spindles
	}
	if live && (n.TotalMemory <= 0 || n.TotalCPUs <= 0) {
		return n, fieldErr(sc.path(), "a live node needs positive total_memory and total_cpus")
	}
	return n, nil
}

func decodeInstance(name string, data json.RawMessage, nodeIdx map[string]int) (planner.Instance, error) {
	in := planner.Instance{Name: name, State: planner.Up, Secondary: planner.NoNode}
	var (
		have                                 [4]bool
		disks, nics, tags, kindSet, nodesSet bool
		kind, state                          string
		nodes                                []string
	)
	// missingSize is the first disk without a size, reported after the
	// other missing fields, in the order Ganeti checks them.
	missingSize := -1
	fields := [4]string{"disk_space_total", "memory", "vcpus", "spindle_use"}
	nums := [4]*int64{&in.DiskSpace, &in.Memory, &in.VCPUs, &in.SpindleUse}
	sc := &scanner{b: data, coll: "instances", key: name}
	err := sc.object("", func(key []byte) error {
		if sc.null() {
			return nil
		}
		var err error
		switch string(key) {
		case "disks":
			disks = true
			err = sc.array("disks", func(k int) error {
				d := planner.Disk{}
				size := false
				field := fmt.Sprintf("disks[%d]", k)
				err := sc.object(field, func(key []byte) error {
					if sc.null() {
						return nil
					}
					var err error
					switch string(key) {
					case "size":
						d.Size, err = sc.count(field + ".size")
						size = true
					case "spindles":
						d.Spindles, err = sc.count(field + ".spindles")
					default:
						sc.skip()
					}
					return err
				})
				if !size && missingSize < 0 {
					missingSize = k
				}
				in.Disks = append(in.Disks, d)
				return err
			})
		case "nics":
			nics = true
			err = sc.array("nics", func(int) error {
				in.NICs++
				sc.skip()
				return nil
			})
		case "tags":
			tags = true
			in.Tags, err = sc.strings("tags")
		case "disk_template":
			kindSet = true
			kind, err = sc.str("disk_template")
		case "admin_state":
			state, err = sc.str("admin_state")
		case "owner":
			in.Owner, err = sc.str("owner")
		case "nodes":
			nodesSet = true
			nodes, err = sc.strings("nodes")
		default:
			for k, f := range fields {
				if string(key) == f {
					*nums[k], err = sc.count(f)
					have[k] = true
					return err
				}
			}
			sc.skip()
		}
		return err
	})
	if err != nil {
		return in, err
	}
	for k, f := range fields {
		if !have[k] {
			return in, fieldErr(sc.path()+"."+f, "missing")
		}
		if *nums[k] < 0 {
			return in, fieldErr(sc.path()+"."+f, "must not be negative")
		}
	}
	switch {
	case !disks:
		return in, fieldErr(sc.path()+".disks", "missing")
	case !nics:
		return in, fieldErr(sc.path()+".nics", "missing")
	case !tags:
		return in, fieldErr(sc.path()+".tags", "missing")
	case !kindSet:
		return in, fieldErr(sc.path()+".disk_template", "missing")
	case !nodesSet:
		return in, fieldErr(sc.path()+".nodes", "missing")
	case missingSize >= 0:
		return in, fieldErr(fmt.Sprintf("%s.disks[%d].size", sc.path(), missingSize), "missing")
	}
	in.Storage = planner.StorageKind(kind)
	if !in.Storage.Known() {
		return in, fieldErr(sc.path()+".disk_template", fmt.Sprintf("unknown storage kind %q", kind))
	}
	if state != "" {
		in.State = planner.RunState(state)
		if in.State != planner.Up && in.State != planner.Down && in.State != planner.Offline {
			return in, fieldErr(sc.path()+".admin_state", fmt.Sprintf("%q is not one of up, down, offline", state))
		}
	}
	if len(nodes) == 0 {
		return in, fieldErr(sc.path()+".nodes", "empty node list")
	}
	for i, nn := range nodes {
		idx, ok := nodeIdx[nn]
		if !ok {
			return in, fieldErr(fmt.Sprintf("%s.nodes[%d]", sc.path(), i), fmt.Sprintf("unknown node %q", nn))
		}
		switch i {
		case 0:
			in.Primary = idx
		case 1:
			in.Secondary = idx
		}
	}
	if in.Storage.Mirroring() == planner.MirroredInternally {
		if len(nodes) < 2 {
			return in, fieldErr(sc.path()+".nodes", fmt.Sprintf("storage kind %q needs a primary and a secondary node", kind))
		}
		if in.Primary == in.Secondary {
			return in, fieldErr(sc.path()+".nodes", "primary and secondary are the same node")
		}
	} else {
		in.Secondary = planner.NoNode
	}
	return in, nil
}

func decodeInto(v json.RawMessage, path string, dst any) error {
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return fieldErr(path, "is null")
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return fieldErr(path, describeJSONError(err))
	}
	return nil
}
