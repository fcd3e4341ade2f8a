package migration

import (
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/downtime"
)

// The downtime budget (issue 30): a migration whose switch is predicted
// to cost more downtime than its budget does not switch. It syncs again,
// each sync shrinking the final delta, until the prediction fits; when
// the re-sync rule says more syncs will not help (the syncs allowed are
// spent, or the size stopped shrinking) and it still does not fit, it
// fails with both figures, and the abort returns the instance to its
// prior state on the source. It never switches over budget knowingly: an
// operator's switch is refused too.
//
// The prediction is planner/downtime's, the model the gateway's estimate
// uses: the overhead the gateway measured on earlier switches (kept in
// the request, events.DowntimeBasis), the last sync's size as the final
// delta (the instance dirties about as much again while one more pass
// runs), at the rate the migration's own syncs measured.

// budget is the migration's downtime budget: its request's, else the
// instance's own (InstanceDeclared.MaxDowntimeMS, as the inventory holds
// it at this step), else the settings' in force; 0 for none. The order is
// the gateway's too (gateway/budget.go): the narrower scope wins.
func (p *pass) budget() time.Duration {
	a := p.m.request()
	ms := a.MaxDowntimeMS
	if in := p.env.Inv.Instances[a.Instance]; ms == 0 && in != nil {
		ms = in.MaxDowntimeMS
	}
	if ms == 0 {
		ms = p.settings().MaxDowntimeMS
	}
	return time.Duration(ms) * time.Millisecond
}

// request is the command that created the migration (its options).
func (m *mig) request() events.MigrationActionRequested {
	if m.created == nil {
		return events.MigrationActionRequested{}
	}
	a, _ := events.As[events.MigrationActionRequested](*m.created)
	return a
}

// predict is the switch's downtime if it ran after the syncs of sizes.
func (p *pass) predict(sizes []int64) downtime.Prediction {
	parts := p.basis()
	if n := len(sizes); n > 0 {
		parts.DeltaBytes = sizes[n-1]
	}
	if p.m.rate > 0 {
		parts.LinkBytesPerSecond = p.m.rate
	}
	return downtime.Predict(parts)
}

// basis is what the gateway measured before the migration, or, for a
// request that carries none, the stated defaults of the instance's kind.
func (p *pass) basis() downtime.Parts {
	if b := p.m.request().Downtime; b != nil {
		return downtime.Parts{Overhead: time.Duration(b.OverheadMS) * time.Millisecond,
			LinkBytesPerSecond: b.LinkBytesPerSecond, ChecksumBytesPerSecond: b.ChecksumBytesPerSecond}
	}
	in := p.env.Inv.Instances[p.m.rec.Instance]
	if in == nil {
		return downtime.Parts{}
	}
	overhead, _ := downtime.DefaultOverhead(in.Storage, p.m.rec.PriorRunState)
	return downtime.Parts{Overhead: overhead, ChecksumBytesPerSecond: downtime.ChecksumRate(in.Storage)}
}

// predicted writes into r the prediction for a switch after sizes and
// the budget in force, and returns them.
func (p *pass) predicted(r *events.MigrationStateChanged, sizes []int64) (downtime.Prediction, time.Duration) {
	pred, budget := p.predict(sizes), p.budget()
	r.PredictedDowntimeMS, r.MaxDowntimeMS = pred.Total().Milliseconds(), budget.Milliseconds()
	return pred, budget
}

// step is an automatic migration's next step after a sync.
type step int

const (
	stepSync step = iota
	stepSwitch
	stepFail // over budget, and more syncs will not help
)

// nextStep holds the re-sync rule's verdict v to the budget: switch only
// when the rule says so and the prediction fits; fail when it does not
// fit and the rule says syncing more will not shrink it. The reason is
// for the record.
func nextStep(v verdict, pred downtime.Prediction, budget time.Duration) (step, string) {
	fits := downtime.Fits(pred, budget)
	switch {
	case v.Switch && fits && budget > 0:
		return stepSwitch, fmt.Sprintf("%s; predicted downtime %s, within the budget of %d ms", v.Why, pred, budget.Milliseconds())
	case v.Switch && fits:
		return stepSwitch, v.Why
	case !v.Switch:
		return stepSync, v.Why
	case v.Stalled != "":
		return stepFail, fmt.Sprintf("over the downtime budget: the switch's predicted downtime is %d ms (%s), over the budget of %d ms, and more syncs will not shrink it: %s",
			pred.Total().Milliseconds(), pred, budget.Milliseconds(), v.Stalled)
	}
	return stepSync, fmt.Sprintf("%s, but the switch's predicted downtime %s is over the budget of %d ms; syncing again",
		v.Why, pred, budget.Milliseconds())
}

// overBudget says why an operator's switch after sizes is refused, ""
// if it fits.
func (p *pass) overBudget(sizes []int64) string {
	pred, budget := p.predict(sizes), p.budget()
	if downtime.Fits(pred, budget) {
		return ""
	}
	return fmt.Sprintf("the switch's predicted downtime is %d ms (%s), over the budget of %d ms; sync again to shrink the final delta, or abort",
		pred.Total().Milliseconds(), pred, budget.Milliseconds())
}
