package verify

import (
	"slices"

	"github.com/drovehq/drove/events"
)

// migRun is one per-instance migration: its records (drove.migrations,
// keyed by instance) and, through the opcodes fold, its phases
// (drove.opcodes, keyed by node). The two are on different topics, so
// they are compared once, on the final facts.
type migRun struct {
	id      string
	last    *events.MigrationStateChanged
	lastRef Ref
	// answered holds the causation ids of its records: the phase ends the
	// coordinator wrote a record in answer to.
	answered map[string]bool
}

type migrationBook struct {
	rep   *Report
	migs  map[string]*migRun
	order []string
}

func newMigrationBook(rep *Report) *migrationBook {
	return &migrationBook{rep: rep, migs: map[string]*migRun{}}
}

func (b *migrationBook) record(p events.MigrationStateChanged, e *event) {
	m, ok := b.migs[p.Migration]
	if !ok {
		m = &migRun{id: p.Migration, answered: map[string]bool{}}
		b.migs[p.Migration] = m
		b.order = append(b.order, p.Migration)
	}
	if m.last != nil && m.last.Instance != p.Instance {
		b.rep.add(Migrations, []Ref{m.lastRef, e.ref}, "migration %s's record changed instance from %s to %s",
			p.Migration, m.last.Instance, p.Instance)
	}
	m.last, m.lastRef = &p, e.ref
	if e.env.CausationID != "" {
		m.answered[e.env.CausationID] = true
	}
}

// derived is what the phases say a migration's record must say.
type derived struct {
	switched, switchedEver, finalized, undone bool
	syncs                                     int
	lastSyncBytes                             int64
}

func derive(ops *opcodes, id string) (derived, []*phaseRun) {
	seqs := slices.Clone(ops.byMigration[id])
	slices.Sort(seqs)
	var d derived
	var runs []*phaseRun
	for _, s := range seqs {
		r := ops.phases[phaseKey{id, s}]
		if r.d == nil {
			continue
		}
		runs = append(runs, r)
		if r.end == nil || r.end.Status != events.JobSuccess {
			continue
		}
		switch r.d.Phase {
		case events.PhaseSync:
			d.syncs++
			d.lastSyncBytes = r.end.Bytes
		case events.PhaseSwitch:
			d.switched, d.switchedEver = true, true
		case "rollback":
			d.switched, d.undone = false, true
		case "abort":
			d.undone = true
		case "finalize":
			d.finalized = true
		}
	}
	return d, runs
}

func (b *migrationBook) finish(opts Options, inv *inventory, ops *opcodes) {
	ids := make([]string, 0, len(ops.byMigration))
	for id := range ops.byMigration {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if seqs := ops.byMigration[id]; b.migs[id] == nil && len(seqs) > 0 {
			r := ops.phases[phaseKey{id, seqs[0]}]
			b.rep.add(Migrations, []Ref{refOf(r)}, "migration %s has phases but no record", id)
		}
	}
	b.rep.Counts.Migrations = len(b.migs)
	for _, id := range b.order {
		b.check(b.migs[id], opts, inv, ops)
	}
}

func refOf(r *phaseRun) Ref {
	if r.d != nil {
		return r.dRef
	}
	return r.endRef
}

// check compares a migration's last record with its phases, once the
// record answers the last phase (a phase still running, or ended and not
// answered yet, is open: a violation unless open work is allowed).
func (b *migrationBook) check(m *migRun, opts Options, inv *inventory, ops *opcodes) {
	rec, ref := m.last, m.lastRef
	d, runs := derive(ops, m.id)
	for _, r := range runs {
		if r.d.Instance != rec.Instance || r.d.Source != rec.Source || (rec.Target != "" && r.d.Target != rec.Target) {
			b.rep.add(Migrations, []Ref{r.dRef, ref}, "migration %s's phase %d (%s) moves %s from %s to %s; its record says %s from %s to %s",
				m.id, r.d.Seq, r.d.Phase, r.d.Instance, r.d.Source, r.d.Target, rec.Instance, rec.Source, rec.Target)
		}
	}
	if len(runs) > 0 {
		last := runs[len(runs)-1]
		if last.end == nil || !m.answered[last.endRef.ID] && !endedTooLate(rec, last) {
			if !opts.AllowOpen {
				what := "is still running"
				if last.end != nil {
					what = "ended " + string(last.end.Status) + ", and no record answers it"
				}
				b.rep.add(Migrations, []Ref{refOf(last), ref}, "migration %s's last phase %d (%s) %s", m.id, last.d.Seq, last.d.Phase, what)
			}
			return
		}
	}
	b.compare(m, rec, d, len(runs))
	b.placed(m, rec, d, inv)
}

// endedTooLate reports a phase that ended without effect after its
// migration had already failed or been aborted: its node was cut off from
// the log, the planner gave the migration up, and the end was appended on
// reconnection. There is nothing left to answer.
func endedTooLate(rec *events.MigrationStateChanged, r *phaseRun) bool {
	return r.end != nil && r.end.Status != events.JobSuccess &&
		(rec.State == events.MigrationFailed || rec.State == events.MigrationAborted)
}

func (b *migrationBook) compare(m *migRun, rec *events.MigrationStateChanged, d derived, phases int) {
	ref := []Ref{m.lastRef}
	if rec.PhaseRunning {
		b.rep.add(Migrations, ref, "migration %s's record says a phase is running; its last phase ended", m.id)
	}
	if rec.Switched != d.switched {
		b.rep.add(Migrations, ref, "migration %s's record says switched=%t; its phases say %t", m.id, rec.Switched, d.switched)
	}
	if rec.Finalized != d.finalized {
		b.rep.add(Migrations, ref, "migration %s's record says finalized=%t; its phases say %t", m.id, rec.Finalized, d.finalized)
	}
	if rec.Syncs != d.syncs {
		b.rep.add(Migrations, ref, "migration %s's record counts %d syncs; %d sync phases succeeded", m.id, rec.Syncs, d.syncs)
	} else if d.syncs > 0 && rec.LastSyncBytes != d.lastSyncBytes {
		b.rep.add(Migrations, ref, "migration %s's record says the last sync sent %d bytes; its phase says %d",
			m.id, rec.LastSyncBytes, d.lastSyncBytes)
	}
	switch rec.State {
	case events.MigrationSuccessful:
		if !d.switched {
			b.rep.add(Migrations, ref, "migration %s is successful, but no switch phase stands", m.id)
		}
	case events.MigrationAborted:
		if d.switched || (phases > 0 && !d.undone) {
			b.rep.add(Migrations, ref, "migration %s is aborted, but no abort or rollback phase succeeded (switched=%t)", m.id, d.switched)
		}
	}
}

// placed checks the instance's placements by the migration: on the target
// while the switch stands, back on the source after a rollback, and never
// moved by a migration that did not switch.
func (b *migrationBook) placed(m *migRun, rec *events.MigrationStateChanged, d derived, inv *inventory) {
	in := inv.instances[rec.Instance]
	var pl placement
	var placed bool
	if in != nil {
		pl, placed = in.byRequest[m.id]
	}
	want := ""
	switch {
	case d.switched:
		want = rec.Target
	case d.switchedEver:
		want = rec.Source
	}
	switch {
	case want == "" && placed:
		b.rep.add(Migrations, []Ref{pl.ref, m.lastRef}, "migration %s never switched, but placed %s on %s", m.id, rec.Instance, pl.primary)
	case want != "" && !placed:
		b.rep.add(Migrations, []Ref{m.lastRef}, "migration %s's phases put %s on %s, but it never placed it", m.id, rec.Instance, want)
	case want != "" && pl.primary != want:
		b.rep.add(Migrations, []Ref{pl.ref, m.lastRef}, "migration %s's phases put %s on %s, but its last placement is on %s",
			m.id, rec.Instance, want, pl.primary)
	}
}
