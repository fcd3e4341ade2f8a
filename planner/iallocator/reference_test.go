package iallocator

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/drovehq/drove/planner"
)

// The reference decoders read nodes and instances with encoding/json into
// typed structs: slow but obviously right. FuzzFastDecoderAgrees holds the
// fast scanner-based decoders to them.

// wireNode is a node as Ganeti sends it; pointers tell absent from zero.
type referenceWireNode struct {
	Offline        *bool    `json:"offline"`
	Drained        *bool    `json:"drained"`
	Group          *string  `json:"group"`
	VMCapable      *bool    `json:"vm_capable"`
	Tags           []string `json:"tags"`
	TotalMemory    *float64 `json:"total_memory"`
	ReservedMemory *float64 `json:"reserved_memory"`
	FreeMemory     *float64 `json:"free_memory"`
	TotalDisk      *float64 `json:"total_disk"`
	FreeDisk       *float64 `json:"free_disk"`
	TotalCPUs      *float64 `json:"total_cpus"`
	ReservedCPUs   *float64 `json:"reserved_cpus"`
	TotalSpindles  *float64 `json:"total_spindles"`
	FreeSpindles   *float64 `json:"free_spindles"`
	NDParams       *struct {
		SpindleCount     *float64 `json:"spindle_count"`
		ExclusiveStorage *bool    `json:"exclusive_storage"`
	} `json:"ndparams"`
}

// unmarshalAt decodes one object in a single pass, naming the field of a
// type error the way the rest of the decoder does.
func referenceUnmarshalAt(data json.RawMessage, path string, dst any) error {
	if err := json.Unmarshal(data, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fieldErr(path+"."+te.Field, describeJSONError(err))
		}
		return fieldErr(path, describeJSONError(err))
	}
	return nil
}

func referenceNode(name string, data json.RawMessage, groupIdx map[string]int) (planner.Node, error) {
	path := fmt.Sprintf("nodes[%q]", name)
	n := planner.Node{Name: name, VMCapable: true}
	var w referenceWireNode
	if err := referenceUnmarshalAt(data, path, &w); err != nil {
		return n, err
	}
	switch {
	case w.Offline == nil:
		return n, fieldErr(path+".offline", "missing")
	case w.Drained == nil:
		return n, fieldErr(path+".drained", "missing")
	case w.Group == nil:
		return n, fieldErr(path+".group", "missing")
	case w.NDParams == nil:
		return n, fieldErr(path+".ndparams", "missing")
	case w.NDParams.ExclusiveStorage == nil:
		return n, fieldErr(path+".ndparams.exclusive_storage", "missing")
	}
	n.Offline, n.Drained, n.Tags = *w.Offline, *w.Drained, w.Tags
	g, ok := groupIdx[*w.Group]
	if !ok {
		return n, fieldErr(path+".group", fmt.Sprintf("unknown node group %q", *w.Group))
	}
	n.Group = g
	if w.VMCapable != nil {
		n.VMCapable = *w.VMCapable
	}
	n.ExclusiveStorage = *w.NDParams.ExclusiveStorage
	live := !n.Offline && n.VMCapable
	// Ganeti reads the capacity of live nodes only; dead ones count as empty.
	for _, f := range []struct {
		name string
		src  *float64
		dst  *int64
	}{
		{"total_memory", w.TotalMemory, &n.TotalMemory}, {"reserved_memory", w.ReservedMemory, &n.ReservedMemory},
		{"free_memory", w.FreeMemory, &n.FreeMemory}, {"total_disk", w.TotalDisk, &n.TotalDisk},
		{"free_disk", w.FreeDisk, &n.FreeDisk}, {"total_cpus", w.TotalCPUs, &n.TotalCPUs},
		{"reserved_cpus", w.ReservedCPUs, &n.ReservedCPUs}, {"free_spindles", w.FreeSpindles, &n.FreeSpindles},
	} {
		if err := count(f.src, live, path+"."+f.name, f.dst); err != nil {
			return n, err
		}
	}
	if n.ExclusiveStorage {
		if err := count(w.TotalSpindles, live, path+".total_spindles", &n.TotalSpindles); err != nil {
			return n, err
		}
	} else {
		if w.NDParams.SpindleCount == nil {
			return n, fieldErr(path+".ndparams.spindle_count", "missing")
		}
		n.TotalSpindles = int64(*w.NDParams.SpindleCount)
	}
	if live && (n.TotalMemory <= 0 || n.TotalCPUs <= 0) {
		return n, fieldErr(path, "a live node needs positive total_memory and total_cpus")
	}
	return n, nil
}

// wireInstance is an instance as Ganeti sends it.
type referenceWireInstance struct {
	DiskSpaceTotal *float64 `json:"disk_space_total"`
	Memory         *float64 `json:"memory"`
	VCPUs          *float64 `json:"vcpus"`
	SpindleUse     *float64 `json:"spindle_use"`
	Disks          *[]struct {
		Size     *float64 `json:"size"`
		Spindles *float64 `json:"spindles"`
	} `json:"disks"`
	NICs         *[]json.RawMessage `json:"nics"`
	Tags         *[]string          `json:"tags"`
	DiskTemplate *string            `json:"disk_template"`
	AdminState   *string            `json:"admin_state"`
	Owner        *string            `json:"owner"`
	Nodes        *[]string          `json:"nodes"`
}

func referenceInstance(name string, data json.RawMessage, nodeIdx map[string]int) (planner.Instance, error) {
	path := fmt.Sprintf("instances[%q]", name)
	in := planner.Instance{Name: name, State: planner.Up, Secondary: planner.NoNode}
	var w referenceWireInstance
	if err := referenceUnmarshalAt(data, path, &w); err != nil {
		return in, err
	}
	for _, f := range []struct {
		name string
		src  *float64
		dst  *int64
	}{
		{"disk_space_total", w.DiskSpaceTotal, &in.DiskSpace}, {"memory", w.Memory, &in.Memory},
		{"vcpus", w.VCPUs, &in.VCPUs}, {"spindle_use", w.SpindleUse, &in.SpindleUse},
	} {
		if err := count(f.src, true, path+"."+f.name, f.dst); err != nil {
			return in, err
		}
		if *f.dst < 0 {
			return in, fieldErr(path+"."+f.name, "must not be negative")
		}
	}
	switch {
	case w.Disks == nil:
		return in, fieldErr(path+".disks", "missing")
	case w.NICs == nil:
		return in, fieldErr(path+".nics", "missing")
	case w.Tags == nil:
		return in, fieldErr(path+".tags", "missing")
	case w.DiskTemplate == nil:
		return in, fieldErr(path+".disk_template", "missing")
	case w.Nodes == nil:
		return in, fieldErr(path+".nodes", "missing")
	}
	for i, d := range *w.Disks {
		if d.Size == nil {
			return in, fieldErr(fmt.Sprintf("%s.disks[%d].size", path, i), "missing")
		}
		disk := planner.Disk{Size: int64(*d.Size)}
		if d.Spindles != nil {
			disk.Spindles = int64(*d.Spindles)
		}
		in.Disks = append(in.Disks, disk)
	}
	in.NICs = int64(len(*w.NICs))
	in.Tags = *w.Tags
	kind := *w.DiskTemplate
	in.Storage = planner.StorageKind(kind)
	if !in.Storage.Known() {
		return in, fieldErr(path+".disk_template", fmt.Sprintf("unknown storage kind %q", kind))
	}
	if w.AdminState != nil {
		st := *w.AdminState
		in.State = planner.RunState(st)
		if in.State != planner.Up && in.State != planner.Down && in.State != planner.Offline {
			return in, fieldErr(path+".admin_state", fmt.Sprintf("%q is not one of up, down, offline", st))
		}
	}
	if w.Owner != nil {
		in.Owner = *w.Owner
	}
	nodes := *w.Nodes
	if len(nodes) == 0 {
		return in, fieldErr(path+".nodes", "empty node list")
	}
	for i, nn := range nodes {
		idx, ok := nodeIdx[nn]
		if !ok {
			return in, fieldErr(fmt.Sprintf("%s.nodes[%d]", path, i), fmt.Sprintf("unknown node %q", nn))
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
			return in, fieldErr(path+".nodes", fmt.Sprintf("storage kind %q needs a primary and a secondary node", kind))
		}
		if in.Primary == in.Secondary {
			return in, fieldErr(path+".nodes", "primary and secondary are the same node")
		}
	} else {
		in.Secondary = planner.NoNode
	}
	return in, nil
}

// count takes a JSON number as a whole count; Ganeti sends some sizes as
// floats. An absent value is an error only where required.
func count(v *float64, required bool, path string, dst *int64) error {
	if v == nil {
		if required {
			return fieldErr(path, "missing")
		}
		return nil
	}
	if math.IsNaN(*v) || math.IsInf(*v, 0) || math.Abs(*v) > 1<<53 {
		return fieldErr(path, "number out of range")
	}
	*dst = int64(*v)
	return nil
}

// FuzzFastDecoderAgrees: for any node or instance object, the scanner-based
// decoder and the encoding/json reference decode the same value, or both
// refuse it naming the same field.
func FuzzFastDecoderAgrees(f *testing.F) {
	f.Add([]byte(`{"total_memory": 4096, "reserved_memory": 256, "free_memory": 2816, "total_disk": 102400, "free_disk": 92160, "total_cpus": 4, "reserved_cpus": 1, "free_spindles": 1, "offline": false, "drained": false, "group": "g", "ndparams": {"spindle_count": 1, "exclusive_storage": false}, "tags": ["a"]}`))
	f.Add([]byte(`{"offline": true, "drained": false, "group": "g", "vm_capable": null, "ndparams": {"exclusive_storage": true}}`))
	f.Add([]byte(`{"memory": 1024, "vcpus": 1, "disk_space_total": 10240, "disks": [{"size": 10240, "mode": "rw", "spindles": 2}], "nics": [{}, {"x": [1, {"y": "}"}]}], "tags": [], "spindle_use": 1, "disk_template": "drbd", "admin_state": "up", "nodes": ["n1", "n2"], "owner": "o"}`))
	f.Add([]byte(`{"memory": "big", "vcpus": 1}`))
	f.Add([]byte(`{"memory": 1e400}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return // objectOf refuses it before either decoder runs
		}
		var probe map[string]json.RawMessage
		if json.Unmarshal(data, &probe) != nil || probe == nil {
			return // not an object: objectOf refuses it too
		}
		if foldedKey(probe) {
			return // encoding/json matches keys regardless of case; Ganeti and Drove do not
		}
		groups := map[string]int{"g": 0}
		nodes := map[string]int{"n1": 0, "n2": 1}
		fn, ferr := decodeNode("x", data, groups)
		rn, rerr := referenceNode("x", data, groups)
		if !sameOutcome(ferr, rerr) || (ferr == nil && fmt.Sprint(fn) != fmt.Sprint(rn)) {
			t.Fatalf("node %s\nfast %+v %v\nref  %+v %v", data, fn, ferr, rn, rerr)
		}
		fi, ferr := decodeInstance("x", data, nodes)
		ri, rerr := referenceInstance("x", data, nodes)
		if !sameOutcome(ferr, rerr) || (ferr == nil && fmt.Sprint(fi) != fmt.Sprint(ri)) {
			t.Fatalf("instance %s\nfast %+v %v\nref  %+v %v", data, fi, ferr, ri, rerr)
		}
	})
}

// sameOutcome: both succeed, or both fail on the same field.
func sameOutcome(a, b error) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	if a == nil {
		return true
	}
	var fa, fb *FieldError
	return errors.As(a, &fa) && errors.As(b, &fb) && member(fa.Field) == member(fb.Field)
}

// member is the first member a field path names below its object:
// nodes["x"].disks[0].size -> disks. encoding/json names array elements
// less precisely than the scanner, so only that much is compared.
func member(path string) string {
	_, rest, ok := strings.Cut(path, "].")
	if !ok {
		return path
	}
	if i := strings.IndexAny(rest, ".["); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

var knownKeys = []string{"offline", "drained", "group", "vm_capable", "tags", "ndparams", "exclusive_storage",
	"spindle_count", "total_memory", "reserved_memory", "free_memory", "total_disk", "free_disk", "total_cpus",
	"reserved_cpus", "free_spindles", "total_spindles", "disk_space_total", "memory", "vcpus", "spindle_use",
	"disks", "size", "spindles", "nics", "disk_template", "admin_state", "owner", "nodes"}

// foldedKey reports whether an object (at any depth) has a key that is a
// known field in another case.
func foldedKey(v any) bool {
	switch x := v.(type) {
	case map[string]json.RawMessage:
		for k, raw := range x {
			for _, known := range knownKeys {
				if k != known && strings.EqualFold(k, known) {
					return true
				}
			}
			var inner any
			if json.Unmarshal(raw, &inner) == nil && foldedKey(inner) {
				return true
			}
		}
	case map[string]any:
		for k, raw := range x {
			for _, known := range knownKeys {
				if k != known && strings.EqualFold(k, known) {
					return true
				}
			}
			if foldedKey(raw) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if foldedKey(e) {
				return true
			}
		}
	}
	return false
}
