package projector

import (
	"slices"
	"testing"

	"github.com/drovehq/drove/events"
)

// TestNodeActionsAreTheNodesHistory: an undrain, offline or online asked
// through the API, and the planner service's answer (a refusal too), are
// in the node's history as well as in the action's own.
func TestNodeActionsAreTheNodesHistory(t *testing.T) {
	why := events.WithReason(events.Reason{Actor: "alice", Why: "disk back", RequestID: "na-1"})
	for _, p := range []events.Payload{
		events.NodeActionRequested{Request: "na-1", Node: "n1", Action: events.NodeUndrain},
		events.NodeActionEnded{Request: "na-1", Node: "n1", Action: events.NodeUndrain, Refused: true, Reason: "evacuating"},
	} {
		env := events.New(p, why)
		got := subjectsOf(env, p)
		for _, want := range []subject{{HistoryRequest, "na-1"}, {HistoryNode, "n1"}} {
			if !slices.Contains(got, want) {
				t.Errorf("%T is recorded under %v, want %v among them", p, got, want)
			}
		}
	}
}
