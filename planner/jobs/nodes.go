package jobs

import (
	"slices"

	"github.com/drovehq/drove/events"
)

// Emptying names the oldest active evacuation that empties node, "" if
// none: such a node stays drained until the evacuation has ended
// (planner/nodes refuses to undrain it).
func (s *State) Emptying(node string) string {
	for _, id := range s.Order() {
		r := s.requests[id]
		if r.active() && r.kind == events.TypeEvacuationRequested && slices.Contains(r.evac.Nodes, node) {
			return id
		}
	}
	return ""
}
