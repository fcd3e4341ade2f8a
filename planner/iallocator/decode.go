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
	// The request is checked before the cluster, as Ganeti does, so that
	// a document without one is called that.
	rv, ok := top.get("request")
	if !ok {
		return nil, req, fieldErr("request", "missing")
	}
	if _, err := objectOf(rv, "request"); err != nil {
		return nil, req, err
	}
	c, err := decodeCluster(top)
	if err != nil {
		return nil, req, err
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

// nodeNums are the numeric fields of a node, in the order Ganeti checks
// them.
var nodeNums = [9]string{"total_memory", "reserved_memory", "free_memory", "total_disk", "free_disk",
	"total_cpus", "reserved_cpus", "free_spindles", "total_spindles"}

// nodeScan is what the scan of one node found besides its values.
type nodeScan struct {
	offline, drained, group, nd, excl, spindleCount bool
	have                                            [9]bool
	groupName                                       string
	spindles                                        int64
}

func decodeNode(name string, data json.RawMessage, groupIdx map[string]int) (planner.Node, error) {
	n := planner.Node{Name: name, VMCapable: true}
	var f nodeScan
	nums := [9]*int64{&n.TotalMemory, &n.ReservedMemory, &n.FreeMemory, &n.TotalDisk, &n.FreeDisk,
		&n.TotalCPUs, &n.ReservedCPUs, &n.FreeSpindles, &n.TotalSpindles}
	sc := &scanner{b: data, coll: "nodes", key: name}
	err := sc.object("", func(key []byte) error {
		if sc.null() {
			return nil
		}
		return f.field(sc, &n, nums, string(key))
	})
	if err != nil {
		return n, err
	}
	return n, f.settle(sc, &n, groupIdx)
}

// field reads one field of a node.
func (f *nodeScan) field(sc *scanner, n *planner.Node, nums [9]*int64, key string) error {
	var err error
	switch key {
	case "offline":
		n.Offline, err = sc.boolean("offline")
		f.offline = true
	case "drained":
		n.Drained, err = sc.boolean("drained")
		f.drained = true
	case "group":
		f.groupName, err = sc.str("group")
		f.group = true
	case "vm_capable":
		n.VMCapable, err = sc.boolean("vm_capable")
	case "tags":
		n.Tags, err = sc.strings("tags")
	case "ndparams":
		f.nd = true
		err = sc.object("ndparams", func(key []byte) error {
			if sc.null() {
				return nil
			}
			var err error
			switch string(key) {
			case "exclusive_storage":
				n.ExclusiveStorage, err = sc.boolean("ndparams.exclusive_storage")
				f.excl = true
			case "spindle_count":
				f.spindles, err = sc.count("ndparams.spindle_count")
				f.spindleCount = true
			default:
				sc.skip()
			}
			return err
		})
	default:
		for k, name := range nodeNums {
			if key == name {
				*nums[k], err = sc.count(name)
				f.have[k] = true
				return err
			}
		}
		sc.skip()
	}
	return err
}

// seen is whether an object's field was in the input, and its name.
type seen struct {
	ok   bool
	name string
}

// firstMissing reports the first of fields the input lacks, in the order
// given (Ganeti's), under the object sc is in.
func firstMissing(sc *scanner, fields ...seen) error {
	for _, f := range fields {
		if !f.ok {
			return fieldErr(sc.path()+"."+f.name, "missing")
		}
	}
	return nil
}

// settle reports the first field missing, in Ganeti's order, and sets the
// node's group and spindles.
func (f *nodeScan) settle(sc *scanner, n *planner.Node, groupIdx map[string]int) error {
	if err := firstMissing(sc, seen{f.offline, "offline"}, seen{f.drained, "drained"}, seen{f.group, "group"},
		seen{f.nd, "ndparams"}, seen{f.excl, "ndparams.exclusive_storage"}); err != nil {
		return err
	}
	g, ok := groupIdx[f.groupName]
	if !ok {
		return fieldErr(sc.path()+".group", fmt.Sprintf("unknown node group %q", f.groupName))
	}
	n.Group = g
	// Ganeti reads the capacity of live nodes only; dead ones count as empty.
	live := !n.Offline && n.VMCapable
	for k := 0; k < 8; k++ {
		if !f.have[k] && live {
			return fieldErr(sc.path()+"."+nodeNums[k], "missing")
		}
	}
	if n.ExclusiveStorage {
		if !f.have[8] && live {
			return fieldErr(sc.path()+".total_spindles", "missing")
		}
	} else {
		if !f.spindleCount {
			return fieldErr(sc.path()+".ndparams.spindle_count", "missing")
		}
		n.TotalSpindles = f.spindles
	}
	if live && (n.TotalMemory <= 0 || n.TotalCPUs <= 0) {
		return fieldErr(sc.path(), "a live node needs positive total_memory and total_cpus")
	}
	return nil
}

// instanceNums are the numeric fields of an instance, in the order Ganeti
// checks them.
var instanceNums = [4]string{"disk_space_total", "memory", "vcpus", "spindle_use"}

// instanceScan is what the scan of one instance found besides its values.
type instanceScan struct {
	have                                 [4]bool
	disks, nics, tags, kindSet, nodesSet bool
	kind, state                          string
	nodes                                []string
	// missingSize is the first disk without a size, reported after the
	// other missing fields, in the order Ganeti checks them.
	missingSize int
}

func decodeInstance(name string, data json.RawMessage, nodeIdx map[string]int) (planner.Instance, error) {
	in := planner.Instance{Name: name, State: planner.Up, Secondary: planner.NoNode}
	f := instanceScan{missingSize: -1}
	nums := [4]*int64{&in.DiskSpace, &in.Memory, &in.VCPUs, &in.SpindleUse}
	sc := &scanner{b: data, coll: "instances", key: name}
	err := sc.object("", func(key []byte) error {
		if sc.null() {
			return nil
		}
		return f.field(sc, &in, nums, string(key))
	})
	if err != nil {
		return in, err
	}
	if err := f.complete(sc, nums); err != nil {
		return in, err
	}
	return in, f.settle(sc, &in, nodeIdx)
}

// field reads one field of an instance.
func (f *instanceScan) field(sc *scanner, in *planner.Instance, nums [4]*int64, key string) error {
	var err error
	switch key {
	case "disks":
		f.disks = true
		err = sc.array("disks", func(k int) error { return f.disk(sc, in, k) })
	case "nics":
		f.nics = true
		err = sc.array("nics", func(int) error {
			in.NICs++
			sc.skip()
			return nil
		})
	case "tags":
		f.tags = true
		in.Tags, err = sc.strings("tags")
	case "disk_template":
		f.kindSet = true
		f.kind, err = sc.str("disk_template")
	case "admin_state":
		f.state, err = sc.str("admin_state")
	case "owner":
		in.Owner, err = sc.str("owner")
	case "nodes":
		f.nodesSet = true
		f.nodes, err = sc.strings("nodes")
	default:
		for k, name := range instanceNums {
			if key == name {
				*nums[k], err = sc.count(name)
				f.have[k] = true
				return err
			}
		}
		sc.skip()
	}
	return err
}

// disk reads disk k of an instance.
func (f *instanceScan) disk(sc *scanner, in *planner.Instance, k int) error {
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
	if !size && f.missingSize < 0 {
		f.missingSize = k
	}
	in.Disks = append(in.Disks, d)
	return err
}

// complete reports the first field missing or out of range, in Ganeti's
// order.
func (f *instanceScan) complete(sc *scanner, nums [4]*int64) error {
	for k, name := range instanceNums {
		if !f.have[k] {
			return fieldErr(sc.path()+"."+name, "missing")
		}
		if *nums[k] < 0 {
			return fieldErr(sc.path()+"."+name, "must not be negative")
		}
	}
	if err := firstMissing(sc, seen{f.disks, "disks"}, seen{f.nics, "nics"}, seen{f.tags, "tags"},
		seen{f.kindSet, "disk_template"}, seen{f.nodesSet, "nodes"}); err != nil {
		return err
	}
	if f.missingSize >= 0 {
		return fieldErr(fmt.Sprintf("%s.disks[%d].size", sc.path(), f.missingSize), "missing")
	}
	return nil
}

// settle checks and sets the instance's storage kind, state and nodes.
func (f *instanceScan) settle(sc *scanner, in *planner.Instance, nodeIdx map[string]int) error {
	in.Storage = planner.StorageKind(f.kind)
	if !in.Storage.Known() {
		return fieldErr(sc.path()+".disk_template", fmt.Sprintf("unknown storage kind %q", f.kind))
	}
	if f.state != "" {
		in.State = planner.RunState(f.state)
		if in.State != planner.Up && in.State != planner.Down && in.State != planner.Offline {
			return fieldErr(sc.path()+".admin_state", fmt.Sprintf("%q is not one of up, down, offline", f.state))
		}
	}
	if len(f.nodes) == 0 {
		return fieldErr(sc.path()+".nodes", "empty node list")
	}
	for i, nn := range f.nodes {
		idx, ok := nodeIdx[nn]
		if !ok {
			return fieldErr(fmt.Sprintf("%s.nodes[%d]", sc.path(), i), fmt.Sprintf("unknown node %q", nn))
		}
		switch i {
		case 0:
			in.Primary = idx
		case 1:
			in.Secondary = idx
		}
	}
	if in.Storage.Mirroring() != planner.MirroredInternally {
		in.Secondary = planner.NoNode
		return nil
	}
	if len(f.nodes) < 2 {
		return fieldErr(sc.path()+".nodes", fmt.Sprintf("storage kind %q needs a primary and a secondary node", f.kind))
	}
	if in.Primary == in.Secondary {
		return fieldErr(sc.path()+".nodes", "primary and secondary are the same node")
	}
	return nil
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
