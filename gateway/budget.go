package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// The downtime budget at the gateway: a new migration's request option
// max_downtime_ms, over the instance's own (PUT
// /v1/instances/{name}/max-downtime, InstanceDeclared.MaxDowntimeMS),
// over the settings' (0 follows the next). The coordinator holds the
// switch to it in the same order (planner/migration/budget.go); the
// gateway refuses at once, writing nothing, a budget no switch can meet:
// one below the switch's overhead alone, which no sync shrinks.

// budget is a budget in force and where it came from.
type budget struct {
	ms   int64
	from string
}

// budgetOf is the budget of a request with body b for instance in under
// settings s.
func budgetOf(b wire.MigrateBody, in wire.Instance, s events.SettingsChanged) budget {
	if v := asked(b); v > 0 {
		return budget{v, "max_downtime_ms asked"}
	}
	if in.MaxDowntimeMS > 0 {
		return budget{in.MaxDowntimeMS, in.Name + "'s own max_downtime_ms"}
	}
	return budget{s.MaxDowntimeMS, "the settings' max_downtime_ms"}
}

// checkBudget is a 400 for a budget no event may carry; zero says what
// 0 means where it is asked.
func checkBudget(ms int64, zero string) error {
	switch {
	case ms < 0:
		return badRequest("max_downtime_ms", fmt.Sprintf("max_downtime_ms: %d is negative (%s)", ms, zero))
	case ms > events.MaxViewInt:
		return badRequest("max_downtime_ms", fmt.Sprintf("max_downtime_ms: %d is above %d", ms, events.MaxViewInt))
	}
	return nil
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
	bud, over := budgetOf(b, in, s), est.down.Overhead.Milliseconds()
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

// putMaxDowntime is PUT /v1/instances/{name}/max-downtime: the instance's
// own budget, restated with the instance (InstanceDeclared), as the
// user-migration override is. Owners may set their own instances'; a
// budget is what the tenant trusts its moves to, and the request option
// of an operator's migration still overrides it.
func (g *Gateway) putMaxDowntime(c *gin.Context) error {
	// Decode into a raw map first: max_downtime_ms must be present (0 is
	// a value here: follow the settings').
	var raw map[string]json.RawMessage
	if err := decodeBody(c, &raw, false); err != nil {
		return err
	}
	if _, ok := raw["max_downtime_ms"]; !ok {
		return badRequest("max_downtime_ms", "max_downtime_ms: missing (want a whole number of milliseconds; 0 follows the settings' budget)")
	}
	var b wire.InstanceBudget
	if err := strictJSON(raw, &b); err != nil {
		return err
	}
	if err := checkBudget(b.MaxDowntimeMS, "0 follows the settings' budget"); err != nil {
		return err
	}
	name := c.Param("name")
	return g.restate(c, callerOf(c), name, b.Reason, func(d *events.InstanceDeclared) (string, error) {
		d.MaxDowntimeMS = b.MaxDowntimeMS
		if b.MaxDowntimeMS == 0 {
			return "downtime budget of " + name + " follows the settings' max_downtime_ms", nil
		}
		return fmt.Sprintf("downtime budget of %s: %d ms", name, b.MaxDowntimeMS), nil
	})
}

// strictJSON decodes the members of raw into v as decodeBody would:
// unknown members and wrong types are 400s naming the member.
func strictJSON(raw map[string]json.RawMessage, v any) error {
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	return nil
}
