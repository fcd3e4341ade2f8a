package iallocator

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/drovehq/drove/planner"
)

// minimal is the smallest request Drove plans: two nodes, one instance.
const minimal = `{
 "cluster_tags": [],
 "nodegroups": {"uuid-1": {"name": "default", "alloc_policy": "preferred", "networks": [], "tags": [], "ipolicy": {"std": {}, "minmax": [], "disk-templates": ["drbd", "plain"], "vcpu-ratio": 4.0, "spindle-ratio": 32.0}}},
 "nodes": {
  "node1": {"total_memory": 4096, "reserved_memory": 256, "free_memory": 2816, "total_disk": 102400, "free_disk": 92160, "total_cpus": 4, "reserved_cpus": 1, "free_spindles": 1, "offline": false, "drained": false, "group": "uuid-1", "ndparams": {"spindle_count": 1, "exclusive_storage": false}},
  "node2": {"total_memory": 4096, "reserved_memory": 256, "free_memory": 3840, "total_disk": 102400, "free_disk": 92160, "total_cpus": 4, "reserved_cpus": 1, "free_spindles": 1, "offline": false, "drained": false, "group": "uuid-1", "ndparams": {"spindle_count": 1, "exclusive_storage": false}},
  "node3": {"total_memory": 4096, "reserved_memory": 256, "free_memory": 3840, "total_disk": 102400, "free_disk": 102400, "total_cpus": 4, "reserved_cpus": 1, "free_spindles": 1, "offline": false, "drained": false, "group": "uuid-1", "ndparams": {"spindle_count": 1, "exclusive_storage": false}}
 },
 "instances": {
  "web": {"memory": 1024, "vcpus": 1, "disk_space_total": 10240, "disks": [{"size": 10240, "mode": "rw"}], "nics": [{}], "tags": [], "spindle_use": 1, "disk_template": "drbd", "admin_state": "up", "nodes": ["node1", "node2"]}
 },
 "request": {"type": "node-evacuate", "evac_mode": "primary-only", "instances": ["web"]}
}`

func TestDecodeMinimal(t *testing.T) {
	c, r, err := Decode([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 3 || len(c.Instances) != 1 || c.Nodes[0].Name != "node1" || c.Nodes[2].Name != "node3" {
		t.Fatalf("decoded %+v", c)
	}
	in := c.Instances[0]
	if in.Primary != 0 || in.Secondary != 1 || in.Storage != planner.DRBD || in.Memory != 1024 {
		t.Fatalf("instance %+v", in)
	}
	if r.Kind != planner.NodeEvacuate || r.Mode != planner.PrimaryOnly || r.Instances[0] != "web" {
		t.Fatalf("request %+v", r)
	}
	out, err := Answer([]byte(minimal), planner.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`"success":true`)) || !bytes.Contains(out, []byte(`["web","default",["node2","node1"]]`)) {
		t.Fatalf("answer %s", out)
	}
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, field string
	}{
		{"invalid JSON", `"cluster_tags": []`, `"cluster_tags": [`, "invalid JSON"},
		{"not an object", minimal, `[1, 2]`, "must be a JSON object"},
		{"unknown request type", `"type": "node-evacuate"`, `"type": "teleport"`, "request.type"},
		{"allocate-secondary needs its instance", `"type": "node-evacuate"`, `"type": "allocate-secondary"`, "request.name: missing"},
		{"a request type Ganeti does not have", `"type": "node-evacuate"`, `"type": "allocate-tertiary"`, "unknown request type"},
		{"allocate needs its instance", `"type": "node-evacuate"`, `"type": "allocate"`, "request.name: missing"},
		{"unknown mode", `"evac_mode": "primary-only"`, `"evac_mode": "most"`, "request.evac_mode"},
		{"unknown instance", `"instances": ["web"]}`, `"instances": ["nope"]}`, `request.instances[0]: unknown instance "nope"`},
		{"unknown node", `"nodes": ["node1", "node2"]`, `"nodes": ["node1", "node9"]`, `instances["web"].nodes[1]: unknown node "node9"`},
		{"unknown group", `"group": "uuid-1", "ndparams": {"spindle_count": 1, "exclusive_storage": false}},
  "node2"`, `"group": "uuid-9", "ndparams": {"spindle_count": 1, "exclusive_storage": false}},
  "node2"`, `nodes["node1"].group: unknown node group "uuid-9"`},
		{"missing memory", `"total_memory": 4096, "reserved_memory": 256, "free_memory": 2816`, `"reserved_memory": 256, "free_memory": 2816`, `nodes["node1"].total_memory: missing`},
		{"wrong type", `"memory": 1024`, `"memory": "lots"`, `instances["web"].memory: expected number, got JSON string`},
		{"unknown storage kind", `"disk_template": "drbd"`, `"disk_template": "tape"`, `instances["web"].disk_template: unknown storage kind "tape"`},
		{"mirrored without secondary", `"nodes": ["node1", "node2"]`, `"nodes": ["node1"]`, `needs a primary and a secondary`},
		{"bad alloc policy", `"alloc_policy": "preferred"`, `"alloc_policy": "sometimes"`, `nodegroups["uuid-1"].alloc_policy`},
		{"no request", `,
 "request": {"type": "node-evacuate", "evac_mode": "primary-only", "instances": ["web"]}`, ``, "request: missing"},
		{"trailing garbage", minimal, minimal + "{}", "after top-level value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(minimal, tc.from, tc.to, 1)
			if doc == minimal && tc.from != minimal {
				t.Fatalf("test case does not change the document")
			}
			_, _, err := Decode([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("got %v, want an error naming %q", err, tc.field)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%v is not ErrInvalid", err)
			}
		})
	}
}

func TestEncodeRequestRoundTrip(t *testing.T) {
	c, r, err := Decode([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := EncodeRequest(c, r)
	if err != nil {
		t.Fatal(err)
	}
	c2, r2, err := Decode(doc)
	if err != nil {
		t.Fatalf("re-decoding %s: %v", doc, err)
	}
	a, _ := Answer([]byte(minimal), planner.DefaultOptions())
	b, _ := Answer(doc, planner.DefaultOptions())
	if !bytes.Equal(a, b) || len(c2.Nodes) != len(c.Nodes) || r2.Mode != r.Mode {
		t.Fatalf("round trip changed the answer:\n%s\n%s", a, b)
	}
}

func TestAnswerIsByteIdentical(t *testing.T) {
	first, err := Answer([]byte(minimal), planner.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		again, _ := Answer([]byte(minimal), planner.DefaultOptions())
		if !bytes.Equal(first, again) {
			t.Fatalf("answers differ:\n%s\n%s", first, again)
		}
	}
}

// FuzzDecode: no input makes the decoder or the planner panic, and any
// document Drove accepts it answers with a result that encodes.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte(strings.Replace(minimal, `"primary-only"`, `"all"`, 1)))
	f.Add([]byte(strings.Replace(minimal, `"node-evacuate", "evac_mode": "primary-only"`, `"change-group", "target_groups": []`, 1)))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"nodes": {"a": {"a": 1, "a": 2}}}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, r, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("decode error %v is not ErrInvalid", err)
			}
			return
		}
		p, err := planner.Compute(c, r, planner.DefaultOptions())
		if err != nil {
			return
		}
		if _, err := EncodeResult(p); err != nil {
			t.Fatalf("encode: %v", err)
		}
	})
}
