package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// The audit trail (issue 14): GET /v1/audit, who asked what and who was
// refused, in log order. It reads event_log (schema 020 indexes the
// rows it wants): the asks people made, each with its reason trail, and
// the gateway's audit records (auth.go: refusals, one record each while
// the budget has room, then folded counts, auditlimit.go). Operators
// only: refusals name accounts and what they tried.

// Outcomes of the trail's entries: an ask's is "requested"; an audit
// record's is its own (events.AuditAllowed, events.AuditDenied).
const outcomeRequested = "requested"

// auditRow is a row of audit_list.sql.
type auditRow struct {
	Seq       int64           `db:"seq"`
	ID        string          `db:"id"`
	Time      time.Time       `db:"time"`
	Type      string          `db:"type"`
	Actor     string          `db:"actor"`
	Why       string          `db:"why"`
	RequestID string          `db:"request_id"`
	Payload   json.RawMessage `db:"payload"`
}

var auditOutcomes = []string{outcomeRequested, string(events.AuditAllowed), string(events.AuditDenied)}

func (g *Gateway) getAudit(c *gin.Context) error {
	if who := callerOf(c); !who.operator() {
		return g.deny(c, who, http.StatusForbidden, "only operators may read the audit trail")
	}
	p, err := parsePage(c)
	if err != nil {
		return err
	}
	after := int64(0)
	if p.after != "" {
		if after, err = strconv.ParseInt(p.after, 10, 64); err != nil || after < 0 {
			return badRequest("after", "after: "+strconv.Quote(p.after)+" is not a seq from a previous page")
		}
	}
	outcome, err := oneOfQuery(c, "outcome", auditOutcomes...)
	if err != nil {
		return err
	}
	rows, err := many[auditRow](c, g.db, "audit_list", after, p.limit+1, outcome, strings.TrimSpace(c.Query("actor")))
	if err != nil {
		return err
	}
	out := make([]wire.AuditEntry, 0, len(rows))
	for _, r := range rows {
		out = append(out, auditEntryOf(r))
	}
	return pageOf(c, out, p, func(e wire.AuditEntry) string { return strconv.FormatInt(e.Seq, 10) })
}

// auditEntryOf says who asked what in a row, and how it was answered.
func auditEntryOf(r auditRow) wire.AuditEntry {
	e := wire.AuditEntry{Seq: r.Seq, ID: r.ID, Time: r.Time, Type: r.Type, Actor: r.Actor, Why: r.Why,
		Outcome: outcomeRequested, Count: 1, Request: r.RequestID}
	if r.Type != events.TypeAuditRecorded {
		e.Action = askLine(r.Type, r.Payload)
		return e
	}
	var a events.AuditRecorded
	if json.Unmarshal(r.Payload, &a) != nil {
		e.Action = r.Type
		return e
	}
	e.Action, e.Outcome, e.Detail, e.Account = a.Action, string(a.Outcome), a.Detail, a.Subject
	// The subject is "name (role)": the refused caller, also of a folded
	// count, whose reason trail names the gateway.
	if name, _, ok := strings.Cut(a.Subject, " ("); ok {
		e.Actor = name
	}
	var n int
	if _, err := fmt.Sscanf(a.Detail, "%d refusals folded", &n); err == nil && n > 0 {
		e.Count = n
	}
	return e
}

// askLine says what an ask asked for.
func askLine(typ string, raw json.RawMessage) string {
	var f struct {
		Request, Instance, Node, Mode, Migration, Target, Action string
		Nodes, Instances                                         []string
		TargetGroups                                             []string `json:"target_groups"`
		DryRun                                                   bool     `json:"dry_run"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return typ
	}
	dry := ""
	if f.DryRun {
		dry = " (dry run)"
	}
	switch typ {
	case events.TypeEvacuationRequested:
		return fmt.Sprintf("evacuate %s, mode %s%s", strings.Join(f.Nodes, ", "), f.Mode, dry)
	case events.TypeGroupChangeRequested:
		to := "any group"
		if len(f.TargetGroups) > 0 {
			to = strings.Join(f.TargetGroups, ", ")
		}
		return fmt.Sprintf("move %s to %s%s", strings.Join(f.Instances, ", "), to, dry)
	case events.TypeRequestApproved:
		return "approve request " + f.Request
	case events.TypeRequestCancelled:
		return "cancel request " + f.Request
	case events.TypeMigrationActionRequested:
		s := fmt.Sprintf("%s migration %s of %s", f.Action, f.Migration, f.Instance)
		if f.Target != "" {
			s += " to " + f.Target
		}
		return s
	case events.TypeSettingsChanged:
		return "change the settings: " + string(raw)
	case events.TypeNodeActionRequested:
		return f.Action + " node " + f.Node
	}
	return summarizeEvent(typ, raw)
}
