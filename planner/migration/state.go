package migration

import (
	"slices"
	"strconv"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/inventory"
)

// State is the fold of per-instance migrations (RFD 34): the commands
// callers sent (drove.migrations), the coordinator's own records of them
// (MigrationStateChanged), the phases it dispatched and how they ended
// (drove.opcodes), their progress (drove.progress) and the settings in
// force (drove.settings).
//
// As with requests, the fold only sets facts, so reading the service's own
// events back is a no-op — with one subtlety: a migration's record is a
// whole state, replaced by each MigrationStateChanged, and the service
// applies its records before it reads them back. Reading back an older
// record after a newer one was applied would move the migration back in
// time, so a record whose event id was applied already is skipped.
type State struct {
	byID     map[string]*mig
	order    []string // by the log position of the creating command
	unsorted bool
	settings events.SettingsChanged
	applied  map[string]bool // ids of records and commands folded
	// handled holds the ids of events a record names as its cause: a
	// command or a phase end the coordinator has acted on.
	handled map[string]bool
	// seen is when the coordinator last heard of each phase (dispatch or
	// progress), by its own clock, keyed migration/seq.
	seen map[string]time.Time
	now  func() time.Time
	// deciding is set during a pass (Decide), which reads its migration's
	// commands and phases to the end: it is pruned after.
	deciding bool
	// ended holds the last record of each migration that left the fold
	// (snapshot.go).
	ended map[string]*events.MigrationStateChanged
}

// NewState returns an empty fold whose phase timestamps read now.
func NewState(now func() time.Time) *State {
	return &State{
		byID: map[string]*mig{}, applied: map[string]bool{}, handled: map[string]bool{},
		seen: map[string]time.Time{}, settings: events.DefaultSettings(), now: now,
		ended: map[string]*events.MigrationStateChanged{},
	}
}

// mig is one migration's story.
type mig struct {
	id string
	// rec is the latest record; nil until the coordinator wrote one.
	rec *events.MigrationStateChanged
	// created is the first command naming the migration, whose log
	// position orders migrations (queued ones start in that order).
	created    *events.Envelope
	createdPos inventory.Pos
	commands   []events.Envelope // in log order
	phases     map[int]*phaseRun
	postcopy   bool // a live move went post-copy (its source reported paused)
	// rate is the send rate its latest sync reported (bytes a second):
	// the link rate of its downtime predictions (budget.go).
	rate int64
	// records and causes are the ids this migration put in applied and
	// handled, taken out with it when it ends.
	records, causes []string
}

// phaseRun is one dispatched phase.
type phaseRun struct {
	d      *events.MigrationPhaseDispatched
	dEnv   events.Envelope
	end    *events.MigrationPhaseEnded
	endEnv events.Envelope
}

func (ms *State) get(id string) *mig {
	m, added := inventory.Entry(ms.byID, id, func() *mig { return &mig{id: id, phases: map[int]*phaseRun{}} })
	if added {
		ms.order = append(ms.order, id)
	}
	return m
}

func (m *mig) phase(seq int) *phaseRun {
	p, _ := inventory.Entry(m.phases, seq, func() *phaseRun { return &phaseRun{} })
	return p
}

func seenKey(id string, seq int) string { return id + "/" + strconv.Itoa(seq) }

// Apply folds one event of the migration topics; others are ignored.
// Events of a migration that ended and left the fold are ignored, but for
// a new command naming it, which brings its last record back to be
// answered.
func (ms *State) Apply(env events.Envelope, p events.Payload, pos inventory.Pos) {
	switch e := p.(type) {
	case events.SettingsChanged:
		// One key, one partition: the last read is the last written.
		ms.settings = e
	case events.MigrationActionRequested:
		if ms.applied[env.ID] {
			return
		}
		ms.applied[env.ID] = true
		m := ms.revive(e.Migration)
		m.commands = append(m.commands, env)
		if m.created == nil || pos.Compare(m.createdPos) < 0 {
			m.created, m.createdPos = &env, pos
			ms.unsorted = true
		}
	case events.MigrationStateChanged:
		m := ms.live(e.Migration)
		if m == nil {
			return
		}
		if c := env.CausationID; c != "" && !ms.handled[c] {
			ms.handled[c] = true
			m.causes = append(m.causes, c)
		}
		if ms.applied[env.ID] {
			return
		}
		ms.applied[env.ID] = true
		m.records = append(m.records, env.ID)
		m.rec = &e
		if m.created == nil {
			m.createdPos = pos // until its command is read
		}
		ms.maybePrune(m)
	default:
		ms.applyPhase(env, p)
	}
}

// applyPhase folds a phase's dispatch, end or progress.
func (ms *State) applyPhase(env events.Envelope, p events.Payload) {
	switch e := p.(type) {
	case events.MigrationPhaseDispatched:
		m := ms.live(e.Migration)
		if m == nil {
			return
		}
		ph := m.phase(e.Seq)
		if ph.d == nil {
			ph.d, ph.dEnv = &e, env
			ms.seen[seenKey(e.Migration, e.Seq)] = ms.now()
		}
	case events.MigrationPhaseEnded:
		m := ms.live(e.Migration)
		if m == nil {
			return
		}
		ph := m.phase(e.Seq)
		if ph.end == nil {
			ph.end, ph.endEnv = &e, env
		}
		ms.maybePrune(m)
	case events.MoveStatusReported:
		// A live move's source says "paused" once it went post-copy:
		// from then on the guest runs on the target and no abort undoes it.
		if m, ok := ms.byID[e.Request]; ok && e.Status == events.StatusPaused {
			m.postcopy = true
		}
	case events.Progress:
		if e.Job == 0 {
			if m, ok := ms.byID[e.Request]; ok {
				ms.seen[seenKey(e.Request, e.Index)] = ms.now()
				if e.Phase == events.PhaseSync && e.BytesPerSecond > 0 {
					m.rate = e.BytesPerSecond
				}
			}
		}
	}
}

// live returns migration id, made if new; nil if it ended and left.
func (ms *State) live(id string) *mig {
	if _, gone := ms.ended[id]; gone && ms.byID[id] == nil {
		return nil
	}
	return ms.get(id)
}

// maybePrune takes m out of the fold once it ended for good: its record
// final, its last phase ended and that end answered.
func (ms *State) maybePrune(m *mig) {
	if ms.deciding || m.rec == nil || !final(m.rec) {
		return
	}
	if ph, _ := m.latest(); ph != nil && (ph.end == nil || !ms.handled[ph.endEnv.ID]) {
		return
	}
	ms.prune(m)
}

// Sorted returns migration ids, oldest creation first.
func (ms *State) Sorted() []string {
	if ms.unsorted {
		slices.SortStableFunc(ms.order, func(a, b string) int {
			return ms.byID[a].createdPos.Compare(ms.byID[b].createdPos)
		})
		ms.unsorted = false
	}
	return ms.order
}

// latest returns the phase with the highest seq, and that seq (-1 if none).
func (m *mig) latest() (*phaseRun, int) {
	best := -1
	for seq, p := range m.phases {
		if p.d != nil && seq > best {
			best = seq
		}
	}
	if best < 0 {
		return nil, -1
	}
	return m.phases[best], best
}

// running reports the phase under way: dispatched, the latest, not ended.
func (m *mig) running() *phaseRun {
	p, _ := m.latest()
	if p != nil && p.end == nil {
		return p
	}
	return nil
}

// syncSizes lists the bytes of each successful sync, in order.
func (m *mig) syncSizes() []int64 {
	var seqs []int
	for seq, p := range m.phases {
		if p.d != nil && p.d.Phase == events.PhaseSync && p.end != nil && p.end.Status == events.JobSuccess {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	out := make([]int64, len(seqs))
	for i, s := range seqs {
		out[i] = m.phases[s].end.Bytes
	}
	return out
}

// stoppedAtSwitchPoint says sync number sync ended with the instance
// stopped at the switch point.
func (m *mig) stoppedAtSwitchPoint(sync int) bool {
	for _, p := range m.phases {
		if p.d != nil && p.d.Phase == events.PhaseSync && p.d.Sync == sync && p.end != nil && p.end.AtSwitchPoint {
			return true
		}
	}
	return false
}

// retries counts the dispatches of the latest phase that repeat the one
// before them (same phase, same sync pass): re-dispatches after a stall.
func (m *mig) retries() int {
	_, seq := m.latest()
	if seq < 0 {
		return 0
	}
	last := m.phases[seq].d
	n := 0
	for s := seq - 1; s >= 0; s-- {
		p := m.phases[s]
		if p == nil || p.d == nil || p.d.Phase != last.Phase || p.d.Sync != last.Sync {
			break
		}
		n++
	}
	return n
}

// active reports whether the migration holds its instance: not refused,
// not ended, and, once switched, not yet finalized (rollback may follow).
func (m *mig) active() bool {
	if m.rec == nil {
		return false
	}
	switch m.rec.State {
	case events.MigrationAborted, events.MigrationFailed:
		return false
	case events.MigrationSuccessful:
		return m.rec.Switched && !m.rec.Finalized
	}
	return true
}

// holdsSlot reports whether the migration counts against its source
// node's limit of running migrations: it began and has not switched or
// ended.
func (m *mig) holdsSlot() bool {
	if m.rec == nil || m.rec.Switched {
		return false
	}
	switch m.rec.State {
	case events.MigrationRunning, events.MigrationPaused, events.MigrationScheduled:
		return true
	}
	return false
}

// activeOn returns the active migration of instance, if any.
func (ms *State) activeOn(instance string) *mig {
	for _, id := range ms.order {
		if m := ms.byID[id]; m.rec != nil && m.rec.Instance == instance && m.active() {
			return m
		}
	}
	return nil
}

// ActiveOn names the active migration of instance, "" if none: the
// requests' planner (planner/jobs) must not move an instance a migration
// is moving.
func (ms *State) ActiveOn(instance string) string {
	if m := ms.activeOn(instance); m != nil {
		return m.id
	}
	return ""
}

// slotsUsed counts the migrations holding a slot on node.
func (ms *State) slotsUsed(node string) int {
	n := 0
	for _, m := range ms.byID {
		if m.holdsSlot() && m.rec.Source == node {
			n++
		}
	}
	return n
}

// Record is migration id's latest record, nil if none was written.
func (ms *State) Record(id string) *events.MigrationStateChanged {
	if m, ok := ms.byID[id]; ok {
		return m.rec
	}
	return ms.ended[id]
}
