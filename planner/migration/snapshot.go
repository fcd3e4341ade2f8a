package migration

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/inventory"
)

// A migration that ended (aborted, failed, or successful and finalized)
// leaves the fold: its commands, phases and the ids of its events go, and
// only its last record stays, in ended, to answer a command that names it
// later ("abort refused: the migration is aborted") and to tell a record
// of it read back late from a new migration. Passes and snapshots then
// cost what is active, not what ever ran.

// final reports whether a record ends its migration for good.
func final(r *events.MigrationStateChanged) bool {
	switch r.State {
	case events.MigrationAborted, events.MigrationFailed:
		return true
	case events.MigrationSuccessful:
		return r.Finalized || !r.Switched
	}
	return false
}

// prune moves migration m out of the fold, keeping its last record.
func (ms *State) prune(m *mig) {
	ms.ended[m.id] = m.rec
	for _, c := range m.commands {
		delete(ms.applied, c.ID)
		delete(ms.handled, c.ID)
	}
	for _, id := range m.records {
		delete(ms.applied, id)
	}
	for _, id := range m.causes {
		delete(ms.handled, id)
	}
	for seq, p := range m.phases {
		delete(ms.seen, seenKey(m.id, seq))
		if p.end != nil {
			delete(ms.handled, p.endEnv.ID)
		}
	}
	delete(ms.byID, m.id)
	ms.order = slices.DeleteFunc(ms.order, func(id string) bool { return id == m.id })
}

// revive brings an ended migration back into the fold, its last record
// only, for a new command naming it to be answered.
func (ms *State) revive(id string) *mig {
	m := ms.get(id)
	if m.rec == nil {
		m.rec = ms.ended[id]
	}
	return m
}

// SetClock sets the time phase timestamps read (a restored fold has none).
func (ms *State) SetClock(now func() time.Time) { ms.now = now }

type stateImage struct {
	Migrations []migImage                               `json:"migrations"`
	Settings   events.SettingsChanged                   `json:"settings"`
	Applied    map[string]bool                          `json:"applied"`
	Handled    map[string]bool                          `json:"handled"`
	Seen       map[string]time.Time                     `json:"seen"`
	Ended      map[string]*events.MigrationStateChanged `json:"ended"`
}

type migImage struct {
	ID         string                        `json:"id"`
	Rec        *events.MigrationStateChanged `json:"rec,omitempty"`
	Records    []string                      `json:"records,omitempty"`
	Causes     []string                      `json:"causes,omitempty"`
	Created    *events.Envelope              `json:"created,omitempty"`
	CreatedPos inventory.Pos                 `json:"created_pos"`
	Commands   []events.Envelope             `json:"commands,omitempty"`
	Phases     map[int]phaseImage            `json:"phases,omitempty"`
	Rate       int64                         `json:"rate,omitempty"`
}

type phaseImage struct {
	D      *events.MigrationPhaseDispatched `json:"d,omitempty"`
	DEnv   events.Envelope                  `json:"d_env"`
	End    *events.MigrationPhaseEnded      `json:"end,omitempty"`
	EndEnv events.Envelope                  `json:"end_env"`
}

// MarshalJSON encodes the fold, migrations in their order, for the planner
// service's snapshots.
func (ms *State) MarshalJSON() ([]byte, error) {
	im := stateImage{Settings: ms.settings, Applied: ms.applied, Handled: ms.handled, Seen: ms.seen, Ended: ms.ended}
	for _, id := range ms.Sorted() {
		m := ms.byID[id]
		mi := migImage{ID: m.id, Rec: m.rec, Records: m.records, Causes: m.causes, Created: m.created, CreatedPos: m.createdPos,
			Commands: m.commands, Phases: map[int]phaseImage{}, Rate: m.rate}
		for seq, p := range m.phases {
			mi.Phases[seq] = phaseImage{p.d, p.dEnv, p.end, p.endEnv}
		}
		im.Migrations = append(im.Migrations, mi)
	}
	return json.Marshal(im)
}

// UnmarshalJSON restores a fold MarshalJSON encoded; its clock is set
// with SetClock.
func (ms *State) UnmarshalJSON(b []byte) error {
	var im stateImage
	if err := json.Unmarshal(b, &im); err != nil {
		return err
	}
	*ms = *NewState(ms.now)
	ms.settings = im.Settings
	for k, v := range im.Applied {
		ms.applied[k] = v
	}
	for k, v := range im.Handled {
		ms.handled[k] = v
	}
	for k, v := range im.Seen {
		ms.seen[k] = v
	}
	for k, v := range im.Ended {
		ms.ended[k] = v
	}
	for _, mi := range im.Migrations {
		m := ms.get(mi.ID)
		m.rec, m.records, m.causes = mi.Rec, mi.Records, mi.Causes
		m.created, m.createdPos, m.commands, m.rate = mi.Created, mi.CreatedPos, mi.Commands, mi.Rate
		for seq, p := range mi.Phases {
			m.phases[seq] = &phaseRun{p.D, p.DEnv, p.End, p.EndEnv}
		}
	}
	ms.unsorted = true
	return nil
}
