package nodes

import (
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/inventory"
)

// State is the fold of node commands (drove.requests) and heartbeats
// (drove.heartbeats).
type State struct {
	cmds  map[string]*command // by request id
	order []string            // request ids, in the order read
	// beats is when the service last read each node's heartbeat, by its
	// own clock: a lease is measured where it is judged, so no two
	// clocks are compared. Nodes that never sent one (seeded nodes with
	// no executor) have no lease and are never declared lost.
	beats map[string]time.Time
	// read is where the service's read of each node's heartbeats stands:
	// past the last one read (its offset + 1), as a LeaseCheck says.
	read map[string]int64
	// checks is the pending lease check of each node whose lease lapsed
	// (see lost); a heartbeat read drops it, so one kept was appended
	// after the node's last heartbeat read.
	checks map[string]*leaseCheck
	now    func() time.Time
}

// leaseCheck is a LeaseCheck the service appended (id, at sent by its
// clock) and whether it has read it back from the log.
type leaseCheck struct {
	id   string
	sent time.Time
	read bool
}

// command is one operator's request and whether it was answered.
type command struct {
	env      events.Envelope
	req      events.NodeActionRequested
	answered bool
}

// NewState returns an empty fold whose lease times read now.
func NewState(now func() time.Time) *State {
	return &State{cmds: map[string]*command{}, beats: map[string]time.Time{}, read: map[string]int64{},
		checks: map[string]*leaseCheck{}, now: now}
}

// Apply folds one event read at pos; it reports whether the event was one
// of the fold's own (the node's state itself is the inventory's).
func (s *State) Apply(env events.Envelope, p events.Payload, pos inventory.Pos) bool {
	switch e := p.(type) {
	case events.NodeActionRequested:
		if _, ok := s.cmds[e.Request]; !ok {
			s.cmds[e.Request] = &command{env: env, req: e}
			s.order = append(s.order, e.Request)
		}
		return true
	case events.NodeActionEnded:
		if c, ok := s.cmds[e.Request]; ok {
			c.answered = true
		}
		return true
	case events.NodeHeartbeat:
		s.beats[e.Node] = s.now()
		s.read[e.Node] = pos.Offset + 1
		delete(s.checks, e.Node)
		return true
	case events.LeaseCheck:
		// Only the check read back from the log proves the read current:
		// the service's own copy, applied as it decides, comes before
		// the check is recorded as pending (lost), so it matches nothing.
		if c := s.checks[e.Node]; c != nil && c.id == env.ID {
			c.read = true
		}
		return true
	}
	return false
}

// renew gives node a fresh lease from now (a node brought online must
// renew it before it can be lost again).
func (s *State) renew(node string) {
	if _, ok := s.beats[node]; ok {
		s.beats[node] = s.now()
	}
}

// Pending counts the commands not answered yet.
func (s *State) Pending() int {
	n := 0
	for _, c := range s.cmds {
		if !c.answered {
			n++
		}
	}
	return n
}
