package events

// Topics. Each names the stream a family of events lives in; the payload of
// each type decides its partition key (see the key() methods in types.go), so
// the per-key order noted below holds whoever produces the event.
const (
	// TopicRequests holds what operators and owners ask for and how each
	// request ends: evacuations, group changes, approvals, cancellations,
	// rejections, finishes. Keyed by request id.
	TopicRequests = "drove.requests"

	// TopicInventory holds the declared state of groups, nodes and
	// instances and every placement change. Keyed by group, node or instance
	// name, so each object's history is in order.
	TopicInventory = "drove.inventory"

	// TopicPlans holds the planner's computed plans. Keyed by request id.
	TopicPlans = "drove.plans"

	// TopicJobs holds the lifecycle of a plan's jobs: released (its
	// dependencies are met), cancelled, ended. Keyed by request id, so a
	// request's jobs are read in the order their fates were decided.
	TopicJobs = "drove.jobs"

	// TopicOpcodes holds opcodes and migration phases dispatched to a node,
	// the node's word that each started and ended, receivers' addresses
	// and what a source relays to a move's target (TargetNotified). Keyed
	// by the node each event is for, so an executor reads its own work, in
	// order, in the one partition its node's name maps to.
	TopicOpcodes = "drove.opcodes"

	// TopicProgress holds progress and end events of moves (RFD 34's watch
	// stream) and the status each node reports for a move (oVirt's model).
	// Keyed by instance name: an instance has at most one move at a time.
	TopicProgress = "drove.progress"

	// TopicAudit holds decisions that changed nothing in the system but must
	// be answerable later: who was allowed or denied what.
	TopicAudit = "drove.audit"

	// TopicHeartbeats holds executors' heartbeats (NodeHeartbeat), keyed
	// by node, and the planner's checks that it read them all before it
	// declares a node lost (LeaseCheck, in the node's partition under a
	// key of their own). It is the one topic that is current state, not history:
	// it is compacted, so the broker keeps each node's last beat and
	// heartbeat volume does not grow the log without bound. What the
	// beats decide (a node declared lost, brought online) is recorded on
	// drove.inventory, which keeps everything (DESIGN.md, "Node
	// lifecycle").
	TopicHeartbeats = "drove.heartbeats"
)

// Compacted says whether topic keeps current state only (its latest
// event per key, TopicHeartbeats): the broker may drop its older events,
// so nothing that needs every event reads it (the notary's chains, the
// projector's event_log) and a replay of it equals the live fold only in
// the state it keeps.
func Compacted(topic string) bool { return topic == TopicHeartbeats }

// Topics lists every topic, for creating them and for replaying the log.
func Topics() []string {
	return []string{
		TopicRequests, TopicInventory, TopicPlans, TopicJobs,
		TopicOpcodes, TopicProgress, TopicAudit, TopicMigrations, TopicSettings,
		TopicCheckpoints, TopicHeartbeats,
	}
}

// Consumer groups. No reader joins a group to read: every service reads
// with a kafka.Reader and keeps its own position (the planner service's is
// in its snapshot). An executor keeps its
// checkpoint as its group's committed offset (kafka.Checkpoint): renaming
// a group makes that executor read its partition from offset zero again
// (harmless, only slower). The planner's election is a group's
// membership; the projector keeps its offsets in Postgres, with its views.
const (
	// GroupExecutorPrefix + node name is each node executor's group, which
	// holds its checkpoint in drove.opcodes.
	GroupExecutorPrefix = "drove-executor-"

	// GroupPlannerElection is the planner services' election, not a reader
	// of events: the member assigned partition 0 of drove.inventory leads,
	// the others stand by (planner/service/election.go). It commits no
	// offsets, so renaming it replays nothing.
	GroupPlannerElection = "drove-planner-election"
)

// ExecutorGroup is the consumer group of the executor on node. Renaming a
// node gives its executor a new group, which reads its partition of the
// opcodes topic from the start.
func ExecutorGroup(node string) string { return GroupExecutorPrefix + node }
