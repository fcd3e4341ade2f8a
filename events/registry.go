package events

import (
	"fmt"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
)

// The registry maps (type, version) to the decoder of its payload struct and
// each type to its topic. It is filled once, in init, and only read after,
// so it needs no lock.
type regKey struct {
	typ     string
	version int
}

type entry struct {
	decode func(raw []byte) (Payload, error)
}

var (
	registry = map[regKey]entry{}
	topicOf  = map[string]string{}
)

func init() {
	register[GroupDeclared](TopicInventory)
	register[NodeAnnounced](TopicInventory)
	register[NodeUpdated](TopicInventory)
	register[InstanceDeclared](TopicInventory)
	register[InstancePlaced](TopicInventory)
	register[NodeHeartbeat](TopicHeartbeats)
	register[LeaseCheck](TopicHeartbeats)

	register[EvacuationRequested](TopicRequests)
	register[GroupChangeRequested](TopicRequests)
	register[RequestApproved](TopicRequests)
	register[RequestCancelled](TopicRequests)
	register[RequestRejected](TopicRequests)
	register[RequestFinished](TopicRequests)
	register[NodeActionRequested](TopicRequests)
	register[NodeActionEnded](TopicRequests)

	register[PlanComputed](TopicPlans)

	register[JobReleased](TopicJobs)
	register[JobCancelled](TopicJobs)
	register[JobEnded](TopicJobs)

	register[OpcodeDispatched](TopicOpcodes)
	register[OpcodeStarted](TopicOpcodes)
	register[OpcodeEnded](TopicOpcodes)
	register[OpcodeCancelled](TopicOpcodes)

	register[Progress](TopicProgress)
	register[End](TopicProgress)
	register[MoveStatusReported](TopicProgress)

	register[AuditRecorded](TopicAudit)

	register[MigrationActionRequested](TopicMigrations)
	register[MigrationStateChanged](TopicMigrations)
	register[MigrationPhaseDispatched](TopicOpcodes)
	register[MigrationPhaseEnded](TopicOpcodes)
	register[ReceiverReady](TopicOpcodes)
	register[TargetNotified](TopicOpcodes)
	register[SettingsChanged](TopicSettings)

	register[CheckpointRecorded](TopicCheckpoints)
}

// register adds T's current version. A type whose schema changes keeps its
// old struct registered under the old version next to the new one; a type
// lives on one topic for all its versions.
func register[T Payload](topic string) {
	var zero T
	k := regKey{zero.Type(), zero.Version()}
	if _, dup := registry[k]; dup {
		panic(fmt.Sprintf("events: %s v%d registered twice", k.typ, k.version))
	}
	if t, ok := topicOf[k.typ]; ok && t != topic {
		panic(fmt.Sprintf("events: %s registered on %s and %s", k.typ, t, topic))
	}
	registry[k] = entry{decode: func(raw []byte) (Payload, error) {
		var v T
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("%w: payload of %s v%d: %v", ErrMalformed, k.typ, k.version, err)
		}
		var p problems
		v.check(&p)
		if err := p.err("payload of " + k.typ); err != nil {
			return nil, err
		}
		return v, nil
	}}
	topicOf[k.typ] = topic
}

// lookup finds the decoder for (typ, version), telling an unknown type from a
// known type at a version this build does not support.
func lookup(typ string, version int) (entry, error) {
	if e, ok := registry[regKey{typ, version}]; ok {
		return e, nil
	}
	if _, known := topicOf[typ]; known {
		return entry{}, fmt.Errorf("%w: %s v%d (supported: %v)", ErrUnsupportedVersion, typ, version, Versions(typ))
	}
	return entry{}, fmt.Errorf("%w: %q", ErrUnknownType, typ)
}

// TopicOf returns the topic events of type typ are written to.
func TopicOf(typ string) (string, error) {
	t, ok := topicOf[typ]
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownType, typ)
	}
	return t, nil
}

// formerTopic is where a type was written before it moved: logs written
// then still hold it there. Heartbeats were on drove.inventory, kept
// forever, until they got a compacted topic of their own (issue 18).
var formerTopic = map[string]string{TypeNodeHeartbeat: TopicInventory}

// OnItsTopic says whether an event of type typ read from topic is where
// it belongs: its type's topic, or the one it was written to before it
// moved. An event elsewhere was ordered against the wrong neighbours.
func OnItsTopic(typ, topic string) bool {
	t, ok := topicOf[typ]
	return ok && (t == topic || formerTopic[typ] == topic)
}

// Types lists every registered event type, sorted.
func Types() []string {
	out := make([]string, 0, len(topicOf))
	for t := range topicOf {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Versions lists the schema versions of typ this build can decode, sorted.
func Versions(typ string) []int {
	var out []int
	for k := range registry {
		if k.typ == typ {
			out = append(out, k.version)
		}
	}
	slices.Sort(out)
	return out
}

// strictUnmarshal decodes exactly one JSON value into v, rejecting unknown
// fields, names that differ from a field's only in case, repeated names,
// invalid UTF-8 and anything after the value. It is encoding/json's v2
// (the go-json-experiment module): it reads the text once, where v1's
// Decoder read it to find its end and then again to fill v, and a payload
// twice more inside the envelope; on a progress event that made it 3.2×
// faster, and decoding was half of a reader's CPU (the projector's most of
// all). Every event Encode writes decodes the same either way: json.Marshal
// writes exact names, once each, in valid UTF-8.
func strictUnmarshal(b []byte, v any) error {
	return jsonv2.Unmarshal(b, v, jsonv2.RejectUnknownMembers(true))
}

// ---- Type, version and key of every payload. All are at version 1.

func (GroupDeclared) Type() string         { return TypeGroupDeclared }
func (GroupDeclared) Version() int         { return 1 }
func (p GroupDeclared) key() string        { return p.Name }
func (NodeAnnounced) Type() string         { return TypeNodeAnnounced }
func (NodeAnnounced) Version() int         { return 1 }
func (p NodeAnnounced) key() string        { return p.Name }
func (NodeUpdated) Type() string           { return TypeNodeUpdated }
func (NodeUpdated) Version() int           { return 1 }
func (p NodeUpdated) key() string          { return p.Name }
func (InstanceDeclared) Type() string      { return TypeInstanceDeclared }
func (InstanceDeclared) Version() int      { return 1 }
func (p InstanceDeclared) key() string     { return p.Name }
func (InstancePlaced) Type() string        { return TypeInstancePlaced }
func (InstancePlaced) Version() int        { return 1 }
func (p InstancePlaced) key() string       { return p.Instance }
func (EvacuationRequested) Type() string   { return TypeEvacuationRequested }
func (EvacuationRequested) Version() int   { return 1 }
func (p EvacuationRequested) key() string  { return p.Request }
func (GroupChangeRequested) Type() string  { return TypeGroupChangeRequested }
func (GroupChangeRequested) Version() int  { return 1 }
func (p GroupChangeRequested) key() string { return p.Request }
func (RequestApproved) Type() string       { return TypeRequestApproved }
func (RequestApproved) Version() int       { return 1 }
func (p RequestApproved) key() string      { return p.Request }
func (RequestCancelled) Type() string      { return TypeRequestCancelled }
func (RequestCancelled) Version() int      { return 1 }
func (p RequestCancelled) key() string     { return p.Request }
func (RequestRejected) Type() string       { return TypeRequestRejected }
func (RequestRejected) Version() int       { return 1 }
func (p RequestRejected) key() string      { return p.Request }
func (RequestFinished) Type() string       { return TypeRequestFinished }
func (RequestFinished) Version() int       { return 1 }
func (p RequestFinished) key() string      { return p.Request }
func (PlanComputed) Type() string          { return TypePlanComputed }
func (PlanComputed) Version() int          { return 1 }
func (p PlanComputed) key() string         { return p.Request }
func (JobReleased) Type() string           { return TypeJobReleased }
func (JobReleased) Version() int           { return 1 }
func (p JobReleased) key() string          { return p.Request }
func (JobCancelled) Type() string          { return TypeJobCancelled }
func (JobCancelled) Version() int          { return 1 }
func (p JobCancelled) key() string         { return p.Request }
func (JobEnded) Type() string              { return TypeJobEnded }
func (JobEnded) Version() int              { return 1 }
func (p JobEnded) key() string             { return p.Request }
func (OpcodeDispatched) Type() string      { return TypeOpcodeDispatched }
func (OpcodeDispatched) Version() int      { return 1 }
func (p OpcodeDispatched) key() string     { return p.Node }
func (OpcodeStarted) Type() string         { return TypeOpcodeStarted }
func (OpcodeStarted) Version() int         { return 1 }
func (p OpcodeStarted) key() string        { return p.Node }
func (OpcodeEnded) Type() string           { return TypeOpcodeEnded }
func (OpcodeEnded) Version() int           { return 1 }
func (p OpcodeEnded) key() string          { return p.Node }
func (OpcodeCancelled) Type() string       { return TypeOpcodeCancelled }
func (OpcodeCancelled) Version() int       { return 1 }
func (p OpcodeCancelled) key() string      { return p.Node }
func (Progress) Type() string              { return TypeProgress }
func (Progress) Version() int              { return 1 }
func (p Progress) key() string             { return p.Instance }
func (End) Type() string                   { return TypeEnd }
func (End) Version() int                   { return 1 }
func (p End) key() string                  { return p.Instance }
func (MoveStatusReported) Type() string    { return TypeMoveStatusReported }
func (MoveStatusReported) Version() int    { return 1 }
func (p MoveStatusReported) key() string   { return p.Instance }
func (AuditRecorded) Type() string         { return TypeAuditRecorded }
func (AuditRecorded) Version() int         { return 1 }
func (p AuditRecorded) key() string        { return p.Subject }
