package migration

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/downtime"
)

const mib = 1 << 20

// budgeted starts an automatic migration of vm with a 300 ms budget (0:
// none asked), as the gateway asks it: its prediction kept 200 ms of
// overhead and a 100 MiB/s link, and vm's kind checks nothing here, so
// a final delta of D MiB is predicted 200 + 10 D ms. The begin ends.
func budgeted(t *testing.T, budgetMS int64) *driver {
	return budgetedOn(newDriver(t), budgetMS)
}

// budgetedOn is budgeted on a driver whose world was set up already.
func budgetedOn(d *driver, budgetMS int64) *driver {
	d.command(events.MigrationActionRequested{Migration: d.id, Instance: "vm", Action: events.ActionAutomatic,
		Target: "n2", Account: "acct", Role: events.RoleOperator, MaxDowntimeMS: budgetMS,
		Downtime: &events.DowntimeBasis{PredictedMS: 900, OverheadMS: 200, LinkBytesPerSecond: 100 * mib}})
	d.end(events.JobSuccess, 0)
	return d
}

// A sync whose final delta fits the budget switches, and the record says
// what was predicted and the budget.
func TestBudgetFitsSwitches(t *testing.T) {
	t.Parallel()
	d := budgeted(t, 300)
	if r := d.rec(); r.PredictedDowntimeMS != 900 || r.MaxDowntimeMS != 300 {
		t.Fatalf("record predicts %d ms, budget %d ms; want the gateway's 900 ms, 300 ms", r.PredictedDowntimeMS, r.MaxDowntimeMS)
	}
	d.end(events.JobSuccess, 1<<30) // the full send
	d.check(d.end(events.JobSuccess, 5*mib), want{state: events.MigrationRunning, phase: events.PhaseSwitch,
		dispatched: []string{events.PhaseSwitch}, running: true, message: "predicted downtime 250 ms = 200 ms stop and start + 50 ms final delta"})
	if r := d.rec(); r.PredictedDowntimeMS != 250 || r.MaxDowntimeMS != 300 {
		t.Fatalf("record predicts %d ms, budget %d ms; want 250, 300", r.PredictedDowntimeMS, r.MaxDowntimeMS)
	}
	// The switch carries the budget: a live one plans its pause within it.
	if sw := d.running(); sw.MaxDowntimeMS != 300 {
		t.Fatalf("the switch dispatched with a budget of %d ms, want 300", sw.MaxDowntimeMS)
	}
}

// A sync small enough for the re-sync rule but predicted over budget
// syncs again, until one fits.
func TestBudgetOverKeepsSyncing(t *testing.T) {
	t.Parallel()
	d := budgeted(t, 300)
	d.end(events.JobSuccess, 1<<30)
	d.check(d.end(events.JobSuccess, 20*mib), want{state: events.MigrationRunning, phase: events.PhaseSync,
		dispatched: []string{events.PhaseSync}, running: true, message: "predicted downtime 400 ms = 200 ms stop and start + 200 ms final delta of 20.0 MiB at 100.0 MiB/s is over the budget of 300 ms; syncing again"})
	d.check(d.end(events.JobSuccess, 9*mib), want{state: events.MigrationRunning, phase: events.PhaseSwitch,
		dispatched: []string{events.PhaseSwitch}, running: true, message: "within the budget of 300 ms"})
}

// The rate the migration's own syncs measured replaces the gateway's.
func TestBudgetReadsTheSyncsRate(t *testing.T) {
	t.Parallel()
	d := budgeted(t, 300)
	d.end(events.JobSuccess, 1<<30)
	ph := d.running()
	d.w.read(events.Progress{Request: d.id, Index: ph.Seq, Instance: "vm", Node: "n1", Phase: events.PhaseSync,
		State: events.ProgressRunning, BytesPerSecond: 400 * mib})
	d.check(d.end(events.JobSuccess, 20*mib), want{state: events.MigrationRunning, phase: events.PhaseSwitch,
		dispatched: []string{events.PhaseSwitch}, running: true, message: "50 ms final delta of 20.0 MiB at 400.0 MiB/s"})
}

// When the re-sync rule says more syncs will not help (the size stopped
// shrinking, or the syncs allowed are spent) and the switch still does
// not fit, the migration fails with both figures and aborts: the
// instance stays on its source.
func TestBudgetCannotFitFails(t *testing.T) {
	t.Parallel()
	flat := budgeted(t, 300)
	flat.end(events.JobSuccess, 1<<30)
	for range 3 {
		flat.end(events.JobSuccess, 20*mib)
	}
	flat.check(flat.end(events.JobSuccess, 20*mib), want{state: events.MigrationFailed, phase: "abort", dispatched: []string{"abort"},
		running: true, message: "aborting", err: "over the downtime budget: the switch's predicted downtime is 400 ms"})
	if r := flat.rec(); !strings.Contains(r.Error, "over the budget of 300 ms") || !strings.Contains(r.Error, "stopped shrinking") {
		t.Fatalf("error %q; want the budget and the rule that stopped the syncs", r.Error)
	}
	flat.check(flat.end(events.JobSuccess, 0), want{state: events.MigrationFailed, phase: "abort",
		message: "vm is back on n1, running, after the failure"})

	spent := budgeted(t, 300)
	s := events.DefaultSettings()
	s.ResyncMaxSyncs = 2
	spent.w.read(s)
	spent.end(events.JobSuccess, 1<<30)
	spent.check(spent.end(events.JobSuccess, 11*mib), want{state: events.MigrationFailed, phase: "abort", dispatched: []string{"abort"},
		running: true, err: "predicted downtime is 310 ms"})
	if r := spent.rec(); !strings.Contains(r.Error, "over the budget of 300 ms") || !strings.Contains(r.Error, "2 syncs done") {
		t.Fatalf("error %q; want the budget and the rule that stopped the syncs", r.Error)
	}
	// Exactly the budget fits.
	exact := budgeted(t, 300)
	exact.w.read(s)
	exact.end(events.JobSuccess, 1<<30)
	exact.check(exact.end(events.JobSuccess, 10*mib), want{state: events.MigrationRunning, phase: events.PhaseSwitch,
		dispatched: []string{events.PhaseSwitch}, running: true, message: "predicted downtime 300 ms"})
}

// The settings' budget holds a migration that asked for none; an
// operator's switch over budget is refused, naming both figures.
func TestBudgetRefusesAnOperatorsSwitch(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	s := events.DefaultSettings()
	s.MaxDowntimeMS = 700
	d.w.read(s)
	begun(d)
	d.act(events.ActionSync)
	d.end(events.JobSuccess, 1<<30)
	if r := d.rec(); r.MaxDowntimeMS != 700 {
		t.Fatalf("budget %d ms; want the settings' 700", r.MaxDowntimeMS)
	}
	// No basis from the gateway: vm's kind's stated default, 155 ms
	// of overhead, and the checksum of 1 GiB.
	d.check(d.act(events.ActionSwitch), want{state: events.MigrationPaused,
		message: "switch refused: the switch's predicted downtime is"})
	if r := d.rec(); !strings.Contains(r.Message, "over the budget of 700 ms") || !strings.Contains(r.Message, "155 ms stop and start") {
		t.Fatalf("message %q; want the budget and the prediction's parts", r.Message)
	}
}

// An instance's own budget holds a migration that asked for none, over
// the settings'; one the migration asks for holds it over both.
func TestBudgetOfTheInstance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name           string
		asked, want    int64
		instance, glob int64
	}{
		{"the instance's over the settings'", 0, 450, 450, 700},
		{"the instance's with no settings' budget", 0, 450, 450, 0},
		{"the settings' when the instance follows them", 0, 700, 0, 700},
		{"the request's over the instance's", 300, 300, 450, 700},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDriver(t)
			s := events.DefaultSettings()
			s.MaxDowntimeMS = c.glob
			d.w.read(s)
			in := *d.w.inv.Instances["vm"]
			in.MaxDowntimeMS = c.instance
			d.w.read(in)
			d = budgetedOn(d, c.asked)
			if r := d.rec(); r.MaxDowntimeMS != c.want {
				t.Fatalf("record's budget %d ms; want %d", r.MaxDowntimeMS, c.want)
			}
			d.end(events.JobSuccess, 1<<30)
			d.end(events.JobSuccess, 5*mib) // 250 ms predicted: fits each
			if sw := d.running(); sw.Phase != events.PhaseSwitch || sw.MaxDowntimeMS != c.want {
				t.Fatalf("dispatched %s with a budget of %d ms; want a switch within %d", sw.Phase, sw.MaxDowntimeMS, c.want)
			}
		})
	}
}

// The instance's budget is read at each step: one set on the instance
// while nothing asked otherwise holds the next sync's verdict.
func TestBudgetOfTheInstanceHoldsTheSwitch(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	in := *d.w.inv.Instances["vm"]
	in.MaxDowntimeMS = 300
	d.w.read(in)
	d = budgetedOn(d, 0)
	d.end(events.JobSuccess, 1<<30)
	d.check(d.end(events.JobSuccess, 20*mib), want{state: events.MigrationRunning, phase: events.PhaseSync,
		dispatched: []string{events.PhaseSync}, running: true, message: "is over the budget of 300 ms; syncing again"})
}

// The budget never lets a switch through over it, whatever the sizes and
// settings: a seeded random walk of syncs through the re-sync rule.
func TestBudgetNeverSwitchesOver(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 34))
	for i := range 2000 {
		s := events.SettingsChanged{ResyncMaxBytes: rng.Int64N(100 * mib), ResyncMaxSyncs: 1 + rng.IntN(10), ResyncShrinkWindow: rng.IntN(4)}
		budget := time.Duration(rng.Int64N(1000)) * time.Millisecond
		var sizes []int64
		for range 1 + rng.IntN(12) {
			sizes = append(sizes, rng.Int64N(200*mib))
			pred := downtime.Predict(downtime.Parts{Overhead: 200 * time.Millisecond, DeltaBytes: sizes[len(sizes)-1],
				LinkBytesPerSecond: 100 * mib, ChecksumBytesPerSecond: 200 * mib})
			v := switchNow(sizes, s)
			next, why := nextStep(v, pred, budget)
			if next == stepSwitch && pred.Total() > budget && budget > 0 {
				t.Fatalf("walk %d: switched at %s over the budget %s (%s)", i, pred.Total(), budget, why)
			}
			if next == stepFail && (v.Stalled == "" || pred.Total() <= budget) {
				t.Fatalf("walk %d: failed with %s within %s or the rule not stalled (%+v)", i, pred.Total(), budget, v)
			}
			if next != stepSync {
				break
			}
		}
	}
}
