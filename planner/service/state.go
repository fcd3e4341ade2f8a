package service

import (
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/inventory"
	"github.com/drovehq/drove/planner/jobs"
	"github.com/drovehq/drove/planner/migration"
	"github.com/drovehq/drove/planner/nodes"
)

// state is everything the service knows: a fold of the topics it reads,
// kept by the packages that decide on it. The inventory is the ground both
// kinds of decision stand on; requests and jobs are planner/jobs' fold,
// per-instance migrations planner/migration's.
type state struct {
	inv  *inventory.Inventory
	reqs *jobs.State
	migs *migration.State
	// nodes is planner/nodes' fold: operators' node commands and leases.
	nodes *nodes.State
}

// newState is an empty state whose migration timers read now.
func newState(now func() time.Time) *state {
	// Leases are measured on the wall clock (monotonic), not on the timers'
	// clock, which tests move forward by hours.
	return &state{inv: inventory.New(), reqs: jobs.NewState(), migs: migration.NewState(now), nodes: nodes.NewState(time.Now)}
}

// apply folds one event found at pos into the fold it belongs to; types
// no fold uses are ignored.
func (s *state) apply(env events.Envelope, p events.Payload, pos inventory.Pos) {
	if s.nodes.Apply(env, p, pos) {
		return
	}
	switch p.(type) {
	case events.GroupDeclared, events.NodeAnnounced, events.NodeUpdated,
		events.InstanceDeclared, events.InstancePlaced:
		s.inv.Apply(p, pos)
		return
	}
	if !s.reqs.Apply(env, p, pos) {
		s.migs.Apply(env, p, pos)
	}
}

// applyDecision folds one of the service's own decisions at once, before
// it is read back from the log.
func (s *state) applyDecision(env events.Envelope, p events.Payload) {
	s.apply(env, p, inventory.Unread(env))
}

// reserveInFlight takes from c the room every move in flight still needs:
// active requests' moves and per-instance migrations' (planner/jobs,
// reserve.go), so a migration's target is picked on what they leave.
func (s *state) reserveInFlight(c *planner.Cluster) {
	s.reqs.ReserveInFlight(s.inv, c)
	jobs.ReserveMigrations(s.inv, c, s.migs.InFlight())
}
