package nodes

import (
	"encoding/json"
	"time"

	"github.com/drovehq/drove/events"
)

// stateImage is what the planner service's snapshot keeps of the fold: the
// commands not answered yet (an answered one changes no later decision)
// and the nodes that hold a lease. Lease times are not kept: they are read
// on the service's own clock, so a restored fold gives every leased node a
// fresh lease from the restore, as a full replay (which reads every beat
// at start) does too.
type stateImage struct {
	Commands []commandImage `json:"commands"`
	Leased   []string       `json:"leased"`
	// Read is where the read of each node's heartbeats stood (State.read),
	// for the next LeaseCheck to say.
	Read map[string]int64 `json:"read,omitempty"`
}

type commandImage struct {
	Env events.Envelope            `json:"env"`
	Req events.NodeActionRequested `json:"req"`
}

// MarshalJSON encodes the fold for the planner service's snapshot.
func (s *State) MarshalJSON() ([]byte, error) {
	im := stateImage{Commands: []commandImage{}, Leased: []string{}, Read: s.read}
	for _, id := range s.order {
		if c := s.cmds[id]; !c.answered {
			im.Commands = append(im.Commands, commandImage{c.env, c.req})
		}
	}
	for n := range s.beats {
		im.Leased = append(im.Leased, n)
	}
	return json.Marshal(im)
}

// UnmarshalJSON restores a fold MarshalJSON encoded; its clock is
// time.Now until SetClock.
func (s *State) UnmarshalJSON(b []byte) error {
	var im stateImage
	if err := json.Unmarshal(b, &im); err != nil {
		return err
	}
	*s = *NewState(time.Now)
	for _, c := range im.Commands {
		s.cmds[c.Req.Request] = &command{env: c.Env, req: c.Req}
		s.order = append(s.order, c.Req.Request)
	}
	for _, n := range im.Leased {
		s.beats[n] = s.now()
	}
	for n, at := range im.Read {
		s.read[n] = at
	}
	return nil
}

// SetClock sets the clock leases are read on, renewing every lease from
// its now: a restored fold judges leases from the restore on.
func (s *State) SetClock(now func() time.Time) {
	s.now = now
	for n := range s.beats {
		s.beats[n] = now()
	}
}
