package events

import (
	"strings"
	"testing"
	"time"
)

// samples holds one valid payload of every registered type; the round-trip
// tests and the fuzz corpus are built from it, and TestSamplesCoverRegistry
// fails when a new type is registered without one.
func samples() []Payload {
	no := false
	started := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	job0 := Job{Index: 0, Opcodes: []Opcode{
		{OpID: OpInstanceMigrate, Instance: "inst1", Mode: ModeMigrateLive, AllowFailover: true},
	}}
	job1 := Job{Index: 1, Opcodes: []Opcode{
		{OpID: OpInstanceReplaceDisks, Instance: "inst2", Mode: ModeReplaceNewSecondary, RemoteNode: "node4"},
	}, Depends: []Dependency{{Job: -1, Statuses: []JobStatus{JobSuccess}}}}
	job2 := Job{Index: 2, Opcodes: []Opcode{
		{OpID: OpInstanceFailover, Instance: "inst8", TargetNode: "node5"},
	}, Depends: []Dependency{{Job: -2, Statuses: []JobStatus{}}}}
	node := NodeAnnounced{
		Name: "node1", Group: "g1",
		Total:     Resources{MemoryMiB: 65536, DiskMiB: 1 << 20, CPUs: 16, Spindles: 4},
		Free:      Resources{MemoryMiB: 32768, DiskMiB: 1 << 19, CPUs: 8, Spindles: 2},
		VMCapable: true, Tags: []string{"rack:a1"}, ReservedMemoryMiB: 1024,
		SendBytesPerSecond: 1250000000, ReceiveBytesPerSecond: 125000000,
	}
	drained := NodeUpdated(node)
	drained.Drained = true
	return []Payload{
		GroupDeclared{Name: "g1", AllocPolicy: AllocPreferred, Tags: []string{"dc:ams"}, Policy: &InstancePolicy{
			MinMax: []SpecRange{{Min: Spec{MemoryMiB: 128, CPUs: 1, DiskMiB: 1024, Disks: 1, NICs: 1, SpindleUse: 1},
				Max: Spec{MemoryMiB: 32768, CPUs: 8, DiskMiB: 1 << 20, Disks: 16, NICs: 8, SpindleUse: 8}}},
			Std:           Spec{MemoryMiB: 128, CPUs: 1, DiskMiB: 1024, Disks: 1, NICs: 1, SpindleUse: 1},
			DiskTemplates: []StorageKind{StorageDRBD, StorageZFSLocal}, VCPURatio: 4, SpindleRatio: 32},
			ClusterTags: []string{"htools:nlocation:rack", "htools:migration:hv"}},
		node,
		drained,
		InstanceDeclared{
			Name: "inst1", Owner: "acct-42",
			Size:    Size{MemoryMiB: 4096, VCPUs: 2, DisksMiB: []int64{10240, 20480}, Spindles: 1},
			Storage: StorageZFSReplicated, RunState: RunRunning,
			PrimaryNode: "node1", SecondaryNode: "node2",
			NICs: []NIC{{MAC: "aa:00:00:00:00:01", Network: "public"}},
			Tags: []string{"<web>&co"}, UserMigration: &no, MaxDowntimeMS: 300,
		},
		InstancePlaced{Instance: "inst1", Group: "g2", PrimaryNode: "node2", SecondaryNode: "node4",
			PreviousGroup: "g1", PreviousPrimary: "node1", PreviousSecondary: "node2", Request: "req-1"},
		EvacuationRequested{Request: "req-1", Nodes: []string{"node1", "node2"}, Mode: EvacAll,
			DryRun: true, IgnoreSoftErrors: true, MaxMovesPerNode: 2},
		GroupChangeRequested{Request: "req-2", Instances: []string{"inst1"}, TargetGroups: []string{"g2"}},
		RequestApproved{Request: "req-1"},
		RequestCancelled{Request: "req-1"},
		RequestRejected{Request: "req-1", Reason: "node1 is not in any group"},
		RequestFinished{Request: "req-1",
			Moved:  []Moved{{Instance: "inst1", Group: "g1", Nodes: []string{"node2", "node4"}}},
			Failed: []Failed{{Instance: "inst9", Reason: "plain storage cannot be evacuated"}}},
		PlanComputed{Request: "req-1",
			Moved:       []Moved{{Instance: "inst1", Group: "g1", Nodes: []string{"node2", "node4"}}},
			Failed:      []Failed{{Instance: "inst9", Reason: "plain storage cannot be evacuated"}},
			Jobs:        []Job{job0, job1, job2},
			ScoreBefore: 3.25, ScoreAfter: 1.5},
		JobReleased{Request: "req-1", Job: job1},
		JobCancelled{Request: "req-1", Job: 2, Reason: "request cancelled"},
		JobEnded{Request: "req-1", Job: 0, Status: JobError, Error: "target out of memory"},
		OpcodeDispatched{Request: "req-1", Job: 1, Index: 0, Node: "node2", Opcode: job1.Opcodes[0],
			Facts: &InstanceFacts{Size: Size{MemoryMiB: 2048, VCPUs: 1, DisksMiB: []int64{10240}},
				Storage: StorageDRBD, RunState: RunRunning, Primary: "node2", Secondary: "node3",
				Groups: map[string]string{"node2": "g1", "node3": "g1", "node4": "g1"}}},
		OpcodeStarted{Request: "req-1", Job: 1, Index: 0, Node: "node2"},
		OpcodeEnded{Request: "req-1", Job: 1, Index: 0, Node: "node2", Status: JobSuccess},
		OpcodeCancelled{Request: "req-1", Job: 1, Index: 0, Node: "node2", Reason: "request cancelled"},
		Progress{Request: "req-1", Job: 1, Index: 0, Instance: "inst2", Node: "node2",
			Phase: PhaseSync, State: ProgressRunning, Current: 45916, Total: 91832,
			ETASeconds: 0.218, BytesPerSecond: 22943, Message: "syncing data",
			Started: started, DurationSeconds: 0.377},
		End{Request: "req-1", Job: 1, Index: 0, Instance: "inst2", Node: "node2",
			Phase: PhaseSwitch, State: EndSuccessful, Message: "migration successful"},
		MoveStatusReported{Request: "req-1", Instance: "inst2", Node: "node2", Status: StatusMigrationSource},
		AuditRecorded{Action: "migrate", Subject: "inst1", Outcome: AuditDenied,
			Detail: "owner acct-42 may not migrate inst1"},
		MigrationActionRequested{Migration: "mig-1", Instance: "inst1", Action: ActionSchedule,
			Target: "node3", ScheduledAt: &started, Account: "acct-42", Role: RoleOwner},
		MigrationStateChanged{Migration: "mig-1", Instance: "inst1", Account: "acct-42", Role: RoleOwner,
			Source: "node1", Target: "node3", Automatic: true, State: MigrationRunning, Phase: PhaseSync,
			Syncs: 2, LastSyncBytes: 1 << 20, PriorRunState: RunRunning},
		MigrationPhaseDispatched{Migration: "mig-1", Instance: "inst1", Node: "node1", Seq: 2,
			Phase: PhaseSync, Source: "node1", Target: "node3", Sync: 2, SendMbps: 50,
			Facts: &InstanceFacts{Size: Size{MemoryMiB: 4096, VCPUs: 2}, Storage: StorageZFSLocal,
				RunState: RunRunning, Primary: "node1"}},
		MigrationPhaseEnded{Migration: "mig-1", Instance: "inst1", Node: "node1", Seq: 2,
			Phase: PhaseSync, Status: JobSuccess, Bytes: 1 << 20},
		ReceiverReady{Request: "req-1", Job: 1, Index: 0, Node: "node2", Target: "node4", Addr: "127.0.0.1:4711"},
		TargetNotified{Node: "node4", Event: New(OpcodeDispatched{Request: "req-1", Job: 1, Index: 0, Node: "node2",
			Opcode: job1.Opcodes[0]}, WithTime(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)), WithProducer("planner-1"),
			WithReason(Reason{Actor: "planner", Why: "job 1 released", RequestID: "req-1"}), withID("ev-relayed"))},
		DefaultSettings(),
		CheckpointRecorded{Topic: TopicRequests, Partition: 1, First: 2, Records: 4, FromOffset: 5, NextOffset: 9,
			Prev: strings.Repeat("ab", 32), Head: strings.Repeat("cd", 32), Marks: "AAAAAAAAAAABAgMEBQYHCA==",
			KeyID: "0011223344556677", Signature: "c2lnbmVk"},
		NodeActionRequested{Request: "req-3", Node: "node1", Action: NodeUndrain},
		NodeActionEnded{Request: "req-3", Node: "node1", Action: NodeUndrain, Refused: true,
			Reason: "request req-1 is emptying node1"},
		NodeHeartbeat{Node: "node1", IntervalMS: 1000, Sent: started},
		LeaseCheck{Node: "node1", Key: "node1/lease-check/3", Sent: started, Read: 42},
	}
}

// sampleEnvelope wraps p the way a service would.
func sampleEnvelope(p Payload) Envelope {
	return New(p,
		WithTime(time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)),
		WithProducer("planner-1"),
		WithReason(Reason{Actor: "operator:alice", Why: "rack a1 maintenance", RequestID: "req-1"}),
	)
}

func TestSamplesCoverRegistry(t *testing.T) {
	have := map[string]bool{}
	for _, p := range samples() {
		have[p.Type()] = true
	}
	for _, typ := range Types() {
		if !have[typ] {
			t.Errorf("no sample for %s; add one to samples()", typ)
		}
	}
}

// withID sets the event id, for samples whose id must not change.
func withID(id string) Option {
	return func(e *Envelope) { e.ID = id }
}
