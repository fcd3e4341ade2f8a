package projector

import (
	"slices"

	"github.com/drovehq/drove/events"
)

// History kinds: what an auditor asks the story of (`drove history KIND`).
const (
	HistoryInstance  = "instance"
	HistoryNode      = "node"
	HistoryRequest   = "request"
	HistoryMigration = "migration"
)

// subject is one thing an event touched.
type subject struct{ kind, name string }

// subjectsOf lists, without duplicates, the instances, nodes, request and
// migration an event touched: those its payload names, a placement's
// previous nodes included, so a node's history shows the instances that
// left it. Progress samples are left out: a move's progress history is its
// own (/v1/migrations/{id}), and its start and end are in every history of
// its instance, node and request. The rows are written with the event's
// event_log row, in the same transaction as its effects (eventlog.go).
func subjectsOf(env events.Envelope, p events.Payload) []subject {
	if _, ok := p.(events.Progress); ok {
		return nil
	}
	var out []subject
	add := func(kind string, names ...string) {
		for _, n := range names {
			s := subject{kind, n}
			if n != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	// A plan's or a request's outcome: each instance, and the nodes of
	// each one moved.
	outcome := func(moved []events.Moved, failed []events.Failed) {
		for _, m := range moved {
			add(HistoryInstance, m.Instance)
			add(HistoryNode, m.Nodes...)
		}
		for _, f := range failed {
			add(HistoryInstance, f.Instance)
		}
	}
	if r := requestOf(env); r != "" {
		if isMigrationEvent(p) {
			add(HistoryMigration, r)
		} else {
			add(HistoryRequest, r)
		}
	}
	add(HistoryInstance, instanceOf(p))
	switch e := p.(type) {
	case events.NodeAnnounced:
		add(HistoryNode, e.Name)
	case events.NodeUpdated:
		add(HistoryNode, e.Name)
	case events.NodeActionRequested:
		add(HistoryNode, e.Node)
	case events.NodeActionEnded: // a refusal, too, is the node's story
		add(HistoryNode, e.Node)
	case events.InstanceDeclared:
		add(HistoryNode, e.PrimaryNode, e.SecondaryNode)
	case events.InstancePlaced:
		add(HistoryNode, e.PrimaryNode, e.SecondaryNode, e.PreviousPrimary, e.PreviousSecondary)
		add(HistoryRequest, e.Request)
	case events.EvacuationRequested:
		add(HistoryNode, e.Nodes...)
	case events.GroupChangeRequested:
		add(HistoryInstance, e.Instances...)
	case events.PlanComputed:
		outcome(e.Moved, e.Failed)
	case events.RequestFinished:
		outcome(e.Moved, e.Failed)
	case events.OpcodeDispatched:
		add(HistoryNode, e.Node, e.Opcode.From, e.Opcode.To)
	case events.OpcodeStarted:
		add(HistoryNode, e.Node)
	case events.OpcodeEnded:
		add(HistoryNode, e.Node)
	case events.OpcodeCancelled:
		add(HistoryNode, e.Node)
	case events.End:
		add(HistoryNode, e.Node)
	case events.MoveStatusReported:
		add(HistoryNode, e.Node)
	case events.MigrationActionRequested:
		add(HistoryMigration, e.Migration)
		add(HistoryNode, e.Target)
	case events.MigrationStateChanged:
		add(HistoryMigration, e.Migration)
		add(HistoryNode, e.Source, e.Target)
	case events.MigrationPhaseDispatched:
		add(HistoryMigration, e.Migration)
		add(HistoryNode, e.Node)
	case events.MigrationPhaseEnded:
		add(HistoryMigration, e.Migration)
		add(HistoryNode, e.Node)
	}
	return out
}

// isMigrationEvent says the event's request id is a per-instance
// migration's: the coordinator's reason trail names the migration.
func isMigrationEvent(p events.Payload) bool {
	switch p.(type) {
	case events.MigrationActionRequested, events.MigrationStateChanged,
		events.MigrationPhaseDispatched, events.MigrationPhaseEnded, events.ReceiverReady:
		return true
	}
	return false
}

// checkpointEffects folds drove.checkpoints: the notary's checkpoints have
// no view but the event log (`drove verify-log` reads them from Kafka).
func checkpointEffects(_ events.Envelope, p events.Payload) ([]stmt, bool) {
	_, ok := p.(events.CheckpointRecorded)
	return nil, ok
}
