package iallocator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/drovehq/drove/planner"
)

// fuzzCluster is a small cluster document missing its request: two nodes,
// a mirrored and a shared-storage instance.
const fuzzCluster = `{"cluster_tags": ["htools:nlocation:rack", "htools:migration:hv", "htools:iextags:svc"],
"nodegroups": {"u1": {"name": "g1", "alloc_policy": "preferred", "networks": ["net1"]}},
"nodes": {
 "n1": {"total_memory": 8192, "reserved_memory": 512, "free_memory": 6144, "total_disk": 102400, "free_disk": 81920, "total_cpus": 8, "reserved_cpus": 1, "free_spindles": 4, "offline": false, "drained": false, "group": "u1", "tags": ["rack:a", "hv:x"], "ndparams": {"spindle_count": 4, "exclusive_storage": false}},
 "n2": {"total_memory": 8192, "reserved_memory": 512, "free_memory": 7168, "total_disk": 102400, "free_disk": 92160, "total_cpus": 8, "reserved_cpus": 1, "free_spindles": 4, "offline": false, "drained": false, "group": "u1", "tags": ["rack:b", "hv:x"], "ndparams": {"spindle_count": 4, "exclusive_storage": false}},
 "n3": {"total_memory": 8192, "reserved_memory": 512, "free_memory": 8192, "total_disk": 102400, "free_disk": 102400, "total_cpus": 8, "reserved_cpus": 1, "free_spindles": 4, "offline": false, "drained": false, "group": "u1", "tags": ["rack:a", "hv:y"], "ndparams": {"spindle_count": 4, "exclusive_storage": false}}},
"instances": {
 "d": {"memory": 1024, "vcpus": 1, "disk_space_total": 10240, "disks": [{"size": 10240}], "nics": [], "tags": ["svc:a"], "spindle_use": 1, "disk_template": "drbd", "nodes": ["n1", "n2"]},
 "r": {"memory": 1024, "vcpus": 1, "disk_space_total": 0, "disks": [{"size": 10240}], "nics": [], "tags": [], "spindle_use": 1, "disk_template": "rbd", "nodes": ["n2"]}},
"request": `

// FuzzDecodeAllocationRequests: any request part of an allocate,
// multi-allocate, relocate or allocate-secondary document is either refused with an error that
// names a field, or decoded into a request the planner answers without
// panicking, whose answer is JSON, and which encodes back to a document
// that decodes to the same request.
func FuzzDecodeAllocationRequests(f *testing.F) {
	for _, s := range []string{
		`{"type": "allocate", "name": "new", "required_nodes": 2, "disk_template": "drbd", "memory": 1024, "vcpus": 1, "disk_space_total": 1024, "disks": [{"size": 1024, "spindles": 1}], "nics": [{"network": "net1"}], "tags": ["svc:a"], "spindle_use": 1}`,
		`{"type": "allocate", "name": "new", "required_nodes": 1, "disk_template": "plain", "memory": 512, "vcpus": 2, "disk_space_total": 2048, "disks": [{"size": 2048}], "nics": [], "tags": [], "spindle_use": 1, "group_name": "g1", "restrict-to-nodes": ["n3"], "admin_state": "down"}`,
		`{"type": "multi-allocate", "instances": [{"name": "a", "required_nodes": 1, "disk_template": "rbd", "memory": 512, "vcpus": 1, "disk_space_total": 0, "disks": [{"size": 1024}], "nics": [], "tags": [], "spindle_use": 1}, {"name": "b", "required_nodes": 2, "disk_template": "drbd", "memory": 9999, "vcpus": 1, "disk_space_total": 1024, "disks": [{"size": 1024}], "nics": [{"network": "nope"}], "tags": [], "spindle_use": 1}]}`,
		`{"type": "relocate", "name": "d", "required_nodes": 1, "relocate_from": ["n2"]}`,
		`{"type": "relocate", "name": "r", "required_nodes": 1, "relocate_from": ["n2"]}`,
		`{"type": "relocate", "name": 0, "required_nodes": "aaa"}`,
		`{"type": "allocate-secondary", "name": "r"}`,
		`{"type": "allocate-secondary", "name": "d"}`,
		`{"type": "allocate", "name": "x", "memory": -1}`,
		`{"type": "multi-allocate", "instances": [1]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, req []byte) {
		doc := append([]byte(fuzzCluster), req...)
		doc = append(doc, '}')
		c, r, err := Decode(doc)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) || fe.Field == "" {
				t.Fatalf("error without a field: %v", err)
			}
			return
		}
		if r.Kind != planner.Allocate && r.Kind != planner.MultiAllocate && r.Kind != planner.Relocate && r.Kind != planner.AllocateSecondary {
			return // the other kinds have their own tests
		}
		p, err := planner.Compute(c, r, planner.DefaultOptions())
		if err == nil {
			out, err := EncodeAnswer(r.Kind, p)
			if err != nil || !json.Valid(out) {
				t.Fatalf("answer %s: %v", out, err)
			}
		}
		again, err := EncodeRequest(c, r)
		if err != nil {
			t.Fatal(err)
		}
		_, r2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded request refused: %v\n%s", err, again)
		}
		if a, b := requestKey(r), requestKey(r2); a != b {
			t.Fatalf("round trip changed the request:\n%s\n%s", a, b)
		}
	})
}

// requestKey prints what a request asks, the run state aside (Ganeti does
// not send it for new instances).
func requestKey(r planner.Request) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %q %q %d\n", r.Kind, r.Instances, r.RelocateFrom, r.RequiredNodes)
	for _, ni := range r.New {
		in := ni.Instance
		fmt.Fprintf(&b, "%q %d %q %q %q %s %d %d %d %d %d %v %q\n", in.Name, ni.RequiredNodes, ni.Group,
			ni.RestrictToNodes, ni.Networks, in.Storage, in.Memory, in.VCPUs, in.DiskSpace, in.SpindleUse,
			in.NICs, in.Disks, in.Tags)
	}
	return b.String()
}
