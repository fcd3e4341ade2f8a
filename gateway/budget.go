package gateway

import (
	"context"
	"fmt"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// The downtime budget at the gateway: a new migration's request option
// max_downtime_ms, over the settings' (0 follows them). The coordinator
// holds the switch to it (planner/migration/budget.go); the gateway
// refuses at once, writing nothing, a budget no switch can meet: one
// below the switch's overhead alone, which no sync shrinks.

// budget is a budget in force and where it came from.
type budget struct {
	ms   int64
	from string
}

// budgetOf is the budget of a request with body b under settings s.
func budgetOf(b wire.MigrateBody, s events.SettingsChanged) budget {
	if v := asked(b); v > 0 {
		return budget{v, "max_downtime_ms asked"}
	}
	return budget{s.MaxDowntimeMS, "the settings' max_downtime_ms"}
}

// asked is the budget the request asks for itself, 0 for none.
func asked(b wire.MigrateBody) int64 {
	if b.MaxDowntimeMS == nil {
		return 0
	}
	return *b.MaxDowntimeMS
}

// predictFor predicts a new migration's downtime for its request (what
// the coordinator predicts again from), refusing a budget below the
// switch's overhead.
func (g *Gateway) predictFor(ctx context.Context, in wire.Instance, s events.SettingsChanged, b wire.MigrateBody) (*events.DowntimeBasis, error) {
	est, err := g.estimate(ctx, in, s)
	if err != nil {
		return nil, err
	}
	bud, over := budgetOf(b, s), est.down.Overhead.Milliseconds()
	if bud.ms > 0 && over > bud.ms {
		e := conflict(codeOverBudget, "max_downtime_ms", fmt.Sprintf(
			"the downtime budget of %d ms (%s) is below the overhead of %s's switch alone, %d ms to stop and start, which no sync shrinks (predicted downtime %d ms: %s); ask for at least %d ms",
			bud.ms, bud.from, in.Name, over, est.down.Total().Milliseconds(), est.down, over))
		e.Instance = in.Name
		return nil, e
	}
	return est.basis(), nil
}

// codeOverBudget is the refusal of a budget no switch can meet.
const codeOverBudget = "over_budget"
