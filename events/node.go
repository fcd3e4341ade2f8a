package events

import "time"

// A node's lifecycle beyond its inventory: what an operator asks of it
// (undrain, offline, online), how the planner service answers, and the
// heartbeats by which an executor holds its node's lease. The node's state
// itself stays in NodeUpdated (drained, offline): these events only ask
// for a change and explain it.

const (
	TypeNodeActionRequested = "node.action_requested"
	TypeNodeActionEnded     = "node.action_ended"
	TypeNodeHeartbeat       = "node.heartbeat"
	TypeLeaseCheck          = "node.lease_check"
)

// NodeAction is what an operator asks of a node.
type NodeAction string

const (
	// NodeUndrain returns a drained node to service (drained false).
	NodeUndrain NodeAction = "undrain"
	// NodeOffline declares a node down (offline true): nothing is placed
	// on it, and moves to or from it end as they do when it is lost.
	NodeOffline NodeAction = "offline"
	// NodeOnline returns an offline node (marked so, or lost) to service.
	NodeOnline NodeAction = "online"
)

// NodeActions lists every NodeAction.
func NodeActions() []NodeAction { return []NodeAction{NodeUndrain, NodeOffline, NodeOnline} }

// NodeActionRequested asks the planner service to change a node's state.
// Request is its id (the gateway's), which the answer correlates with:
// NodeActionEnded, after a NodeUpdated restating the node with the change
// unless the action was refused.
type NodeActionRequested struct {
	Request string     `json:"request"`
	Node    string     `json:"node"`
	Action  NodeAction `json:"action"`
}

// NodeActionEnded is the planner service's answer to a NodeActionRequested:
// done (its NodeUpdated was appended in the same transaction, before it),
// or refused and why: the node is unknown, or an active request is
// emptying it (undrain). It shares the request's partition (keyed by node).
type NodeActionEnded struct {
	Request string     `json:"request"`
	Node    string     `json:"node"`
	Action  NodeAction `json:"action"`
	Refused bool       `json:"refused"`
	Reason  string     `json:"reason"`
}

// NodeHeartbeat is an executor renewing its node's lease: the planner
// service declares a node lost (offline) when it has read none for the
// lease's length, and the executor itself stops switching moves when it
// could append none for half of it (DESIGN.md, "Node lifecycle").
// IntervalMS is how often the executor sends them; Sent is its own clock.
type NodeHeartbeat struct {
	Node       string    `json:"node"`
	IntervalMS int64     `json:"interval_ms"`
	Sent       time.Time `json:"sent"`
}

// LeaseCheck is the planner service making sure, before it declares a
// node lost, that it has read every heartbeat the node appended: it is
// appended to the node's partition of drove.heartbeats once the lease has
// lapsed, and the node is declared lost only when the service reads it
// back with no heartbeat read since. A heartbeat the node appended before
// the check comes before it in that partition. So a service whose read
// lags declares no node lost because of the lag: a consumer left on a
// broker cut off from its peers, which answers fetches with nothing new,
// once read no heartbeat for longer than the lease while the node
// appended them through the new leader, unfenced, and went on moving
// instances on a node the planner had given up on (test/partition).
//
// Key is the record's key: one of the service's making that lands in the
// node's partition (not the node's name, under which, on this compacted
// topic, a check would be the last record kept of a node that stopped, in
// place of its last heartbeat). Sent is the service's clock.
//
// Read is where the service's read of the node's heartbeats stood: just
// past the last one it had read (its offset + 1; 0 if none). So the check
// decides from the log alone: the node is lost when no heartbeat of it
// lies between Read and the check, and the check is the last one the
// service appended for the lapse (a check not read back in time is
// appended again, and only the latest counts). The node's executor, back
// from a cut, reads the same records to learn whether the planner gave up
// on it (executor/regain.go).
type LeaseCheck struct {
	Node string    `json:"node"`
	Key  string    `json:"key"`
	Sent time.Time `json:"sent"`
	Read int64     `json:"read,omitempty"`
}

func (n NodeActionRequested) check(p *problems) {
	p.require("request", n.Request)
	p.require("node", n.Node)
	oneOf(p, "action", n.Action, NodeActions()...)
}

func (n NodeActionEnded) check(p *problems) {
	NodeActionRequested{Request: n.Request, Node: n.Node, Action: n.Action}.check(p)
	p.require("reason", n.Reason)
}

func (n NodeHeartbeat) check(p *problems) {
	p.require("node", n.Node)
	if n.IntervalMS <= 0 {
		p.addf("interval_ms", "must be positive (%d)", n.IntervalMS)
	}
}

func (c LeaseCheck) check(p *problems) {
	p.require("node", c.Node)
	p.require("key", c.Key)
	if c.Key == c.Node {
		p.addf("key", "must not be the node's name (%q): the check would replace its last heartbeat", c.Key)
	}
	if c.Read < 0 {
		p.addf("read", "must not be negative (%d)", c.Read)
	}
}

func (NodeActionRequested) Type() string  { return TypeNodeActionRequested }
func (NodeActionRequested) Version() int  { return 1 }
func (p NodeActionRequested) key() string { return p.Node }
func (NodeActionEnded) Type() string      { return TypeNodeActionEnded }
func (NodeActionEnded) Version() int      { return 1 }
func (p NodeActionEnded) key() string     { return p.Node }
func (NodeHeartbeat) Type() string        { return TypeNodeHeartbeat }
func (NodeHeartbeat) Version() int        { return 1 }
func (p NodeHeartbeat) key() string       { return p.Node }
func (LeaseCheck) Type() string           { return TypeLeaseCheck }
func (LeaseCheck) Version() int           { return 1 }
func (c LeaseCheck) key() string          { return c.Key }
