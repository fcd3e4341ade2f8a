package migration

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
)

// driver walks one migration, m1 of vm from n1 to n2 in newWorld, through
// Decide as the service would: a command or a phase's end is read, then
// one pass decides. It knows nothing of the coordinator's rules; each
// test says what the decisions must be.
type driver struct {
	t  *testing.T
	w  *world
	id string
}

func newDriver(t *testing.T) *driver {
	t.Helper()
	return &driver{t: t, w: newWorld(t), id: "m1"}
}

// act reads a command for the migration and decides.
func (d *driver) act(a events.MigrationAction) []events.Envelope {
	return d.command(events.MigrationActionRequested{Migration: d.id, Instance: "vm", Action: a, Target: "n2",
		Account: "acct", Role: events.RoleOperator})
}

// schedule reads a schedule command switching at at, and decides.
func (d *driver) schedule(at time.Time) []events.Envelope {
	return d.command(events.MigrationActionRequested{Migration: d.id, Instance: "vm", Action: events.ActionSchedule,
		Target: "n2", ScheduledAt: &at, Account: "acct", Role: events.RoleOperator})
}

func (d *driver) command(a events.MigrationActionRequested) []events.Envelope {
	d.w.read(a)
	return d.decide()
}

func (d *driver) decide() []events.Envelope { return Decide(d.w.env, d.w.st, d.id) }

// end reads the end of the phase under way, as its executor reports it,
// and decides.
func (d *driver) end(status events.JobStatus, bytes int64) []events.Envelope {
	d.t.Helper()
	ph := d.running()
	d.w.read(events.MigrationPhaseEnded{Migration: d.id, Instance: "vm", Node: ph.Node, Seq: ph.Seq, Phase: ph.Phase,
		Status: status, Bytes: bytes, DowntimeMS: 40, WorkloadDowntimeMS: 55})
	return d.decide()
}

// fail ends the phase under way in error, saying why.
func (d *driver) fail(why string) []events.Envelope {
	d.t.Helper()
	ph := d.running()
	d.w.read(events.MigrationPhaseEnded{Migration: d.id, Instance: "vm", Node: ph.Node, Seq: ph.Seq, Phase: ph.Phase,
		Status: events.JobError, Error: why})
	return d.decide()
}

// running is the phase under way; the test fails if none is.
func (d *driver) running() events.MigrationPhaseDispatched {
	d.t.Helper()
	m := d.w.st.byID[d.id]
	if m == nil || m.running() == nil {
		d.t.Fatalf("no phase of %s is running (record %+v)", d.id, d.w.st.Record(d.id))
	}
	return *m.running().d
}

// rec is the migration's latest record.
func (d *driver) rec() events.MigrationStateChanged {
	d.t.Helper()
	r := d.w.st.Record(d.id)
	if r == nil {
		d.t.Fatalf("%s has no record", d.id)
	}
	return *r
}

// The ways into a state that the tables below start from. Each is the
// shortest walk an operator could take there.

// begun: an on-demand migration whose begin ended (paused, no sync yet).
func begun(d *driver) {
	d.act(events.ActionBegin)
	d.end(events.JobSuccess, 0)
}

// synced: begun and one sync of 1000 bytes ended (paused).
func synced(d *driver) {
	begun(d)
	d.act(events.ActionSync)
	d.end(events.JobSuccess, 1000)
}

// switched: synced and switched (successful, the source copy kept).
func switched(d *driver) {
	synced(d)
	d.act(events.ActionSwitch)
	d.end(events.JobSuccess, 10)
}

// syncing: begun, the first sync under way.
func syncing(d *driver) {
	begun(d)
	d.act(events.ActionSync)
}

// dispatches lists the phases a pass dispatched, in order.
func dispatches(evs []events.Envelope) []events.MigrationPhaseDispatched {
	var out []events.MigrationPhaseDispatched
	for _, e := range evs {
		if p, err := events.As[events.MigrationPhaseDispatched](e); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// phases names the phases a pass dispatched, in order.
func phases(evs []events.Envelope) []string {
	var out []string
	for _, p := range dispatches(evs) {
		out = append(out, p.Phase)
	}
	return out
}

// placements lists where a pass placed the instance.
func placements(evs []events.Envelope) []events.InstancePlaced {
	var out []events.InstancePlaced
	for _, e := range evs {
		if p, err := events.As[events.InstancePlaced](e); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// want is what a pass must leave: the record's fields that matter to a
// transition and the phases dispatched. Empty strings are not checked,
// except dispatched, which is always (nil: nothing dispatched).
type want struct {
	state      events.MigrationState
	phase      string
	dispatched []string
	message    string // a part of the record's message
	err        string // a part of its error
	detail     string // a part of its error detail
	switched   bool
	finalized  bool
	running    bool // PhaseRunning
	// down is the record's downtime figures, Drove's and the workload's
	// (nil: not checked).
	down []int64
}

func (d *driver) check(evs []events.Envelope, w want) {
	d.t.Helper()
	r := record(d.t, evs)
	if got := phases(evs); !slices.Equal(got, w.dispatched) {
		d.t.Errorf("dispatched %v, want %v", got, w.dispatched)
	}
	if w.state != "" && r.State != w.state {
		d.t.Errorf("state %s, want %s (message %q, error %q)", r.State, w.state, r.Message, r.Error)
	}
	if w.phase != "" && r.Phase != w.phase {
		d.t.Errorf("phase %s, want %s", r.Phase, w.phase)
	}
	for _, c := range []struct{ what, got, part string }{
		{"message", r.Message, w.message}, {"error", r.Error, w.err}, {"error detail", r.ErrorDetail, w.detail},
	} {
		if !strings.Contains(c.got, c.part) {
			d.t.Errorf("%s %q, want it to say %q", c.what, c.got, c.part)
		}
	}
	if r.Switched != w.switched || r.Finalized != w.finalized || r.PhaseRunning != w.running {
		d.t.Errorf("switched %t, finalized %t, phase running %t; want %t, %t, %t",
			r.Switched, r.Finalized, r.PhaseRunning, w.switched, w.finalized, w.running)
	}
	if got := []int64{r.DowntimeMS, r.WorkloadDowntimeMS}; w.down != nil && !slices.Equal(got, w.down) {
		d.t.Errorf("downtime %v ms (Drove's, the workload's), want %v", got, w.down)
	}
	// A record is the migration's whole state: the fold keeps the last.
	if got := d.rec(); got.Message != r.Message || got.State != r.State {
		d.t.Errorf("the fold holds %s %q, not the record written (%s %q)", got.State, got.Message, r.State, r.Message)
	}
}
