package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRoundTripEveryType(t *testing.T) {
	for _, p := range samples() {
		t.Run(p.Type(), func(t *testing.T) {
			e := sampleEnvelope(p)
			b, err := Encode(e)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode: %v\n%s", err, b)
			}
			assertSameEnvelope(t, e, got)
			back, err := got.DecodePayload()
			if err != nil {
				t.Fatalf("DecodePayload: %v", err)
			}
			if !reflect.DeepEqual(back, p) {
				t.Fatalf("payload changed in the round trip:\n got %#v\nwant %#v", back, p)
			}
			if topic, err := got.Topic(); err != nil || topic == "" {
				t.Fatalf("Topic() = %q, %v", topic, err)
			}
			env, typed, err := DecodeWithPayload(b)
			if err != nil {
				t.Fatalf("DecodeWithPayload: %v", err)
			}
			assertSameEnvelope(t, got, env)
			if !bytes.Equal(env.Payload, got.Payload) || !reflect.DeepEqual(typed, p) {
				t.Fatalf("DecodeWithPayload differs from Decode then DecodePayload:\n got %#v\nwant %#v", typed, p)
			}
		})
	}
}

func TestNewDerivesTypeVersionAndKey(t *testing.T) {
	e := New(OpcodeStarted{Request: "req-1", Job: 0, Index: 0, Node: "node7"})
	if e.Type != TypeOpcodeStarted || e.Version != 1 || e.Key != "node7" {
		t.Fatalf("got type %q version %d key %q", e.Type, e.Version, e.Key)
	}
	if e.ID == "" || e.Time.IsZero() || e.Time.Location() != time.UTC {
		t.Fatalf("id %q time %v: want a fresh id and a UTC time", e.ID, e.Time)
	}
	if e2 := New(OpcodeStarted{}); e2.ID == e.ID {
		t.Fatalf("two events got the same id %q", e.ID)
	}
}

func TestCausedByCarriesTheTrail(t *testing.T) {
	cause := sampleEnvelope(RequestApproved{Request: "req-1"})
	effect := New(PlanComputed{Request: "req-1"}, CausedBy(cause), WithProducer("planner-1"))
	if effect.CausationID != cause.ID || effect.CorrelationID != "req-1" || effect.Reason != cause.Reason {
		t.Fatalf("effect lost the trail: %+v", effect)
	}
	if _, err := Encode(effect); err != nil {
		t.Fatalf("Encode: %v", err)
	}
}

func TestAs(t *testing.T) {
	e := sampleEnvelope(RequestRejected{Request: "req-1", Reason: "no"})
	r, err := As[RequestRejected](e)
	if err != nil || r.Reason != "no" {
		t.Fatalf("As = %+v, %v", r, err)
	}
	if _, err := As[RequestApproved](e); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("As the wrong type: err = %v, want ErrTypeMismatch", err)
	}
}

// validJSON is a known-good encoding the strictness cases below mutate.
func validJSON(t *testing.T) map[string]any {
	t.Helper()
	b, err := Encode(sampleEnvelope(RequestRejected{Request: "req-1", Reason: "no capacity"}))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDecodeIsStrict(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(m map[string]any)
		raw    string // used instead of mutate when set
		want   error
		field  string // the error must name it
	}{
		{name: "unknown type", mutate: func(m map[string]any) { m["type"] = "node.exploded" },
			want: ErrUnknownType, field: "node.exploded"},
		{name: "unsupported version", mutate: func(m map[string]any) { m["version"] = 2 },
			want: ErrUnsupportedVersion, field: "v2"},
		{name: "unknown envelope field", mutate: func(m map[string]any) { m["priority"] = 1 },
			want: ErrMalformed, field: "priority"},
		{name: "unknown payload field", mutate: func(m map[string]any) {
			m["payload"].(map[string]any)["severity"] = "high"
		}, want: ErrMalformed, field: "severity"},
		{name: "unknown reason field", mutate: func(m map[string]any) {
			m["reason"].(map[string]any)["ticket"] = "T-1"
		}, want: ErrMalformed, field: "ticket"},
		{name: "missing id", mutate: func(m map[string]any) { delete(m, "id") }, want: ErrMalformed, field: "id"},
		{name: "missing type", mutate: func(m map[string]any) { delete(m, "type") }, want: ErrMalformed, field: "type"},
		{name: "missing version", mutate: func(m map[string]any) { delete(m, "version") }, want: ErrMalformed, field: "version"},
		{name: "negative version", mutate: func(m map[string]any) { m["version"] = -1 }, want: ErrMalformed, field: "version"},
		{name: "missing time", mutate: func(m map[string]any) { delete(m, "time") }, want: ErrMalformed, field: "time"},
		{name: "time not UTC", mutate: func(m map[string]any) { m["time"] = "2025-03-01T13:00:00+01:00" },
			want: ErrMalformed, field: "time"},
		{name: "missing key", mutate: func(m map[string]any) { delete(m, "key") }, want: ErrMalformed, field: "key"},
		{name: "key not the payload's", mutate: func(m map[string]any) { m["key"] = "req-2" }, want: ErrMalformed, field: "key"},
		{name: "missing producer", mutate: func(m map[string]any) { delete(m, "producer") }, want: ErrMalformed, field: "producer"},
		{name: "missing reason", mutate: func(m map[string]any) { delete(m, "reason") }, want: ErrMalformed, field: "reason.actor"},
		{name: "missing why", mutate: func(m map[string]any) { delete(m["reason"].(map[string]any), "why") },
			want: ErrMalformed, field: "reason.why"},
		{name: "request id disagrees with correlation", mutate: func(m map[string]any) { m["correlation_id"] = "req-9" },
			want: ErrMalformed, field: "reason.request_id"},
		{name: "missing payload", mutate: func(m map[string]any) { delete(m, "payload") }, want: ErrMalformed, field: "payload"},
		{name: "null payload", mutate: func(m map[string]any) { m["payload"] = nil }, want: ErrMalformed, field: "payload"},
		{name: "payload not an object", mutate: func(m map[string]any) { m["payload"] = []any{1} }, want: ErrMalformed, field: "payload"},
		{name: "payload missing required field", mutate: func(m map[string]any) {
			delete(m["payload"].(map[string]any), "reason")
		}, want: ErrMalformed, field: "reason"},
		{name: "wrong kind", mutate: func(m map[string]any) { m["version"] = "1" }, want: ErrMalformed, field: "version"},
		{name: "trailing data", raw: `{}{}`, want: ErrMalformed, field: "after"},
		{name: "not JSON", raw: `drove`, want: ErrMalformed, field: "envelope"},
		{name: "null", raw: `null`, want: ErrMalformed, field: "id"},
		{name: "empty", raw: ``, want: ErrMalformed, field: "envelope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := []byte(tt.raw)
			if tt.mutate != nil {
				m := validJSON(t)
				tt.mutate(m)
				var err error
				if b, err = json.Marshal(m); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Decode(b)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode(%s) = %v, want %v", b, err, tt.want)
			}
			if _, p, err2 := DecodeWithPayload(b); p != nil || err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("DecodeWithPayload(%s) = %v, %v; want nil, %v", b, p, err2, err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("error %q does not name %q", err, tt.field)
			}
		})
	}
}

func TestDecodeReportsEveryMissingField(t *testing.T) {
	_, err := Decode([]byte(`{"payload":{}}`))
	for _, f := range []string{"id", "type", "version", "time", "key", "producer", "reason.actor", "reason.why"} {
		if !strings.Contains(err.Error(), f+": missing") {
			t.Errorf("error %q does not report %s", err, f)
		}
	}
}

func TestPayloadRules(t *testing.T) {
	tests := []struct {
		name  string
		p     Payload
		field string
	}{
		{"unknown alloc policy", GroupDeclared{Name: "g", AllocPolicy: "sometimes"}, "alloc_policy"},
		{"policy range upside down", GroupDeclared{Name: "g", AllocPolicy: AllocPreferred, Policy: &InstancePolicy{
			MinMax: []SpecRange{{Min: Spec{MemoryMiB: 4096}, Max: Spec{MemoryMiB: 1024}}}, VCPURatio: 4, SpindleRatio: 32}},
			"ipolicy.minmax[0].memory_mib"},
		{"policy without a vcpu ratio", GroupDeclared{Name: "g", AllocPolicy: AllocPreferred, Policy: &InstancePolicy{SpindleRatio: 32}}, "ipolicy.vcpu_ratio"},
		{"policy with an unknown kind", GroupDeclared{Name: "g", AllocPolicy: AllocPreferred, Policy: &InstancePolicy{
			DiskTemplates: []StorageKind{"tape"}, VCPURatio: 4, SpindleRatio: 32}}, "ipolicy.disk_templates[0]"},
		{"negative reserved memory", NodeAnnounced{Name: "n", Group: "g", ReservedMemoryMiB: -1}, "reserved_memory_mib"},
		{"unknown storage", InstanceDeclared{Name: "i", Owner: "o", PrimaryNode: "n1", Storage: "tape", RunState: RunRunning}, "storage"},
		{"mirrored without secondary", InstanceDeclared{Name: "i", Owner: "o", PrimaryNode: "n1", Storage: StorageDRBD, RunState: RunRunning}, "secondary_node"},
		{"plain with secondary", InstanceDeclared{Name: "i", Owner: "o", PrimaryNode: "n1", SecondaryNode: "n2", Storage: StoragePlain, RunState: RunRunning}, "secondary_node"},
		{"negative instance budget", InstanceDeclared{Name: "i", Owner: "o", PrimaryNode: "n1", Storage: StoragePlain, RunState: RunRunning, MaxDowntimeMS: -1}, "max_downtime_ms"},
		{"instance budget over a view's int", InstanceDeclared{Name: "i", Owner: "o", PrimaryNode: "n1", Storage: StoragePlain, RunState: RunRunning, MaxDowntimeMS: MaxViewInt + 1}, "max_downtime_ms"},
		{"unknown evac mode", EvacuationRequested{Request: "r", Nodes: []string{"n"}, Mode: "some"}, "mode"},
		{"evacuation of no nodes", EvacuationRequested{Request: "r", Mode: EvacAll}, "nodes"},
		{"unknown opcode", OpcodeDispatched{Request: "r", Node: "n", Opcode: Opcode{OpID: "OP_INSTANCE_REBOOT", Instance: "i"}}, "op_id"},
		{"replace disks without remote node", OpcodeDispatched{Request: "r", Node: "n",
			Opcode: Opcode{OpID: OpInstanceReplaceDisks, Instance: "i", Mode: ModeReplaceNewSecondary}}, "remote_node"},
		{"job index off its position", PlanComputed{Request: "r", Jobs: []Job{{Index: 3, Opcodes: []Opcode{{OpID: OpInstanceFailover, Instance: "i"}}}}}, "jobs[0].index"},
		{"dependency on a later job", PlanComputed{Request: "r", Jobs: []Job{{Index: 0, Opcodes: []Opcode{{OpID: OpInstanceFailover, Instance: "i"}},
			Depends: []Dependency{{Job: 1}}}}}, "depends[0].job"},
		{"dependency before the first job", PlanComputed{Request: "r", Jobs: []Job{{Index: 0, Opcodes: []Opcode{{OpID: OpInstanceFailover, Instance: "i"}},
			Depends: []Dependency{{Job: -1}}}}}, "depends[0].job"},
		{"unknown dependency status", JobReleased{Request: "r", Job: Job{Index: 1, Opcodes: []Opcode{{OpID: OpInstanceFailover, Instance: "i"}},
			Depends: []Dependency{{Job: -1, Statuses: []JobStatus{"done"}}}}}, "statuses[0]"},
		{"unknown job status", JobEnded{Request: "r", Status: "ok"}, "status"},
		{"unknown end state", End{Request: "r", Node: "n", Instance: "i", Phase: PhaseSync, State: "aborted"}, "state"},
		{"unknown move status", MoveStatusReported{Request: "r", Instance: "i", Node: "n", Status: "migrating"}, "status"},
		{"negative progress", Progress{Request: "r", Node: "n", Instance: "i", Phase: PhaseSync, State: ProgressRunning, Current: -1}, "current"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := sampleEnvelope(tt.p)
			_, err := Encode(e)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Encode = %v, want ErrMalformed naming %q", err, tt.field)
			}
			// The decoder must refuse it too, not only the encoder.
			raw, _ := json.Marshal(e)
			if _, err := Decode(raw); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestEncodeRefusesIncompleteEnvelope(t *testing.T) {
	e := New(RequestApproved{Request: "req-1"}) // no producer, no reason
	_, err := Encode(e)
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "producer") {
		t.Fatalf("Encode = %v, want ErrMalformed naming producer", err)
	}
	if _, err := Encode(Envelope{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Encode(zero) = %v", err)
	}
}

func TestDecodeCanonicalises(t *testing.T) {
	in := `{"id":"e1","type":"request.approved","version":1,"time":"2025-03-01T12:00:00.500+00:00",
		"key":"r1","producer":"p","reason":{"actor":"a","why":"w"},"payload":{ "request" : "r1" }}`
	e, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Payload) != `{"request":"r1"}` || e.Time.Location() != time.UTC {
		t.Fatalf("payload %s time %v: want compact payload and UTC time", e.Payload, e.Time)
	}
}

func TestNewIDLooksLikeAUUID(t *testing.T) {
	id := NewID()
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[14] != '7' || id[18] != '-' || id[23] != '-' ||
		!strings.ContainsRune("89ab", rune(id[19])) {
		t.Fatalf("NewID() = %q", id)
	}
}

// Ids made later sort after: the time leads, to the millisecond.
func TestNewIDSortsByTime(t *testing.T) {
	before := NewID()
	ms := time.Now().UnixMilli()
	for time.Now().UnixMilli() == ms { // the next millisecond, by polling the clock
	}
	if after := NewID(); after <= before {
		t.Fatalf("NewID() %q made after %q sorts before it", after, before)
	}
	want := fmt.Sprintf("%012x", ms)
	if got := strings.ReplaceAll(NewID(), "-", "")[:12]; got < want {
		t.Fatalf("NewID()'s time %s is before the clock's %s", got, want)
	}
}

// assertSameEnvelope compares envelopes field by field; times by Equal,
// payloads as bytes.
func assertSameEnvelope(t *testing.T, want, got Envelope) {
	t.Helper()
	if !sameEnvelope(want, got) {
		t.Fatalf("envelopes differ:\n got %+v\nwant %+v", got, want)
	}
}

func sameEnvelope(a, b Envelope) bool {
	if !a.Time.Equal(b.Time) || !bytes.Equal(a.Payload, b.Payload) {
		return false
	}
	a.Time, b.Time = time.Time{}, time.Time{}
	a.Payload, b.Payload = nil, nil
	return reflect.DeepEqual(a, b)
}
