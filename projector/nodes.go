package projector

import "github.com/drovehq/drove/events"

// nodeEffects folds a node's lifecycle: operators' node commands and their
// answers (drove.requests), and heartbeats (drove.heartbeats; on
// drove.inventory in logs written before it existed).
func nodeEffects(env events.Envelope, p events.Payload) ([]stmt, bool) {
	t := env.Time
	switch e := p.(type) {
	case events.NodeActionRequested:
		return []stmt{st("node_action_requested", e.Request, e.Node, string(e.Action),
			env.Reason.Actor, env.Reason.Why, t)}, true
	case events.NodeActionEnded:
		state := "done"
		if e.Refused {
			state = "refused"
		}
		return []stmt{st("node_action_ended", e.Request, state, e.Reason, t)}, true
	case events.NodeHeartbeat:
		return []stmt{st("node_heartbeat", e.Node, t)}, true
	case events.LeaseCheck:
		return nil, true // the planner's own check; the loss it leads to is a NodeUpdated
	}
	return nil, false
}
