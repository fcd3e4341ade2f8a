package migration

// InFlight lists, by instance, the nodes active migrations still need room
// on beyond where the inventory places their instance: an unswitched
// migration its target (from the moment it is recorded with one, queued
// included, until it switches, fails or is aborted); a switched one not
// yet finalized its source, which a rollback returns to. The requests'
// planner (planner/jobs) takes this room from the nodes it plans on, as it
// does for other requests' moves, so a migration and an evacuation cannot
// fill one node twice.
func (ms *State) InFlight() map[string][]string {
	out := map[string][]string{}
	for _, id := range ms.order {
		m := ms.byID[id]
		if !m.active() || m.rec.Target == "" {
			continue
		}
		if m.rec.Switched {
			out[m.rec.Instance] = []string{m.rec.Source}
		} else {
			out[m.rec.Instance] = []string{m.rec.Target}
		}
	}
	return out
}
