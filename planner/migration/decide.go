package migration

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/inventory"
)

// Env is what a pass reads besides the fold of migrations, and where its
// decisions go.
type Env struct {
	// Inv is the inventory targets are picked and nodes checked on.
	Inv *inventory.Inventory
	// Busy lists the instances jobs of requests hold, with the request
	// holding each (jobs.State.BusyInstances): those cannot migrate.
	Busy func() map[string]string
	// Apply folds one decision into the service's whole state at once.
	Apply func(events.Envelope, events.Payload)
	// Options tune the plan that picks a target when none is asked for.
	Options planner.Options
	// StallRetries is how many times a phase with no progress is
	// dispatched again before the migration fails.
	StallRetries int
	// Producer names the service in the events it writes.
	Producer string
	// Now is the time the timers read.
	Now time.Time
	// Reserve, if not nil, takes from a cluster the room moves in flight
	// still need (requests' moves, other migrations): a target is picked
	// and checked on what they leave.
	Reserve func(*planner.Cluster)
	// Log hears of commands that name no migration.
	Log *slog.Logger
}

// Decide takes every decision migration id needs now — the end of its
// latest phase, its commands not yet answered, its timers — and returns
// them in order, to append in one transaction. Each is applied to the
// state through env.Apply as it is taken.
func Decide(env Env, st *State, id string) []events.Envelope {
	m, ok := st.byID[id]
	if !ok {
		return nil
	}
	p := &pass{env: env, st: st, m: m}
	st.deciding = true
	p.run()
	st.deciding = false
	st.maybePrune(m)
	return p.out
}

// pass is one migration's decisions of one pass.
type pass struct {
	env Env
	st  *State
	m   *mig
	out []events.Envelope
}

// emit appends one decision, caused by cause, and applies it at once.
func (p *pass) emit(payload events.Payload, why string, cause events.Envelope) {
	opts := []events.Option{events.WithProducer(p.env.Producer)}
	if cause.ID != "" {
		opts = append(opts, events.CausedBy(cause))
	}
	origin := ""
	if c := p.m.created; c != nil {
		origin = fmt.Sprintf("; migration %s asked by %s: %s", p.m.id, c.Reason.Actor, c.Reason.Why)
	}
	opts = append(opts, events.WithReason(events.Reason{Actor: "planner", Why: why + origin, RequestID: p.m.id}))
	ev := events.New(payload, opts...)
	p.out = append(p.out, ev)
	p.env.Apply(ev, payload)
}

// record writes r as the migration's record.
func (p *pass) record(r events.MigrationStateChanged, cause events.Envelope) {
	why := fmt.Sprintf("migration %s of %s: %s, phase %s", r.Migration, r.Instance, r.State, r.Phase)
	if r.Message != "" {
		why += ": " + r.Message
	}
	p.emit(r, why, cause)
}

func (p *pass) settings() events.SettingsChanged { return p.st.settings }

// run takes every decision the migration needs now. The latest phase's
// end goes first: a command is judged against the state that end leaves
// (a pause right after a sync ended applies to the next sync).
func (p *pass) run() {
	m := p.m
	if m.rec != nil {
		if ph, _ := m.latest(); ph != nil && ph.end != nil && !p.st.handled[ph.endEnv.ID] {
			p.ended(ph)
		}
	}
	for _, c := range m.commands {
		if !p.st.handled[c.ID] {
			p.command(c)
		}
	}
	if m.rec != nil && !p.lost() { // lost.go: a node of the migration is offline
		p.timers()
	}
}
