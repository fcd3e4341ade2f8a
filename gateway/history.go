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

// History (issue 15): GET /v1/history/{kind}/{id}, every event that
// touched an instance, a node, a request or a per-instance migration, in
// log order, each with who asked and why and what it changed. The
// projector records which subjects each event touched
// (projector/history.go, history_subjects); this file reads them with the
// events and says what changed. Owners read the histories of their own
// instances and of their instances' migrations; nodes and requests are
// the operators'.

func placementString(p wire.Placement) string {
	s := p.Primary
	if p.Secondary != "" {
		s += "+" + p.Secondary
	}
	if p.Group != "" {
		s += " (" + p.Group + ")"
	}
	return s
}

// historyRow is a row of history_subject.sql.
type historyRow struct {
	Seq          int64           `db:"seq"`
	ID           string          `db:"id"`
	Time         time.Time       `db:"time"`
	Type         string          `db:"type"`
	Topic        string          `db:"topic"`
	Partition    int32           `db:"partition"`
	Offset       int64           `db:"offset"`
	Producer     string          `db:"producer"`
	Actor        string          `db:"actor"`
	Why          string          `db:"why"`
	RequestID    string          `db:"request_id"`
	Instance     string          `db:"instance"`
	Payload      json.RawMessage `db:"payload"`
	Previous     json.RawMessage `db:"previous"`
	AskType      string          `db:"ask_type"`
	Requester    string          `db:"requester"`
	RequesterWhy string          `db:"requester_why"`
}

// historyKinds maps a kind of the path to the kinds its events are
// recorded under: a request's and a migration's events share the reason
// trail's request id.
var historyKinds = map[string][]string{
	"instance":  {"instance"},
	"node":      {"node"},
	"request":   {"request", "migration"},
	"migration": {"migration", "request"},
}

func (g *Gateway) getHistory(c *gin.Context) error {
	kind, id := c.Param("kind"), c.Param("id")
	kinds, ok := historyKinds[kind]
	if !ok {
		return notFound("kind", "no history of "+strconv.Quote(kind)+" (want instance, node, request or migration)")
	}
	if err := g.mayReadHistory(c, kind, id); err != nil {
		return err
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
	rows, err := many[historyRow](c, g.db, "history_subject", kinds, id, after, p.limit+1)
	if err != nil {
		return err
	}
	out := make([]wire.HistoryEntry, 0, len(rows))
	for _, r := range rows {
		out = append(out, entryOf(r))
	}
	return pageOf(c, out, p, func(e wire.HistoryEntry) string { return strconv.FormatInt(e.Seq, 10) })
}

// mayReadHistory lets operators read every history and owners only their
// own instances' and their instances' migrations'.
func (g *Gateway) mayReadHistory(c *gin.Context, kind, id string) error {
	who := callerOf(c)
	if who.operator() {
		return nil
	}
	switch kind {
	case "instance":
		_, err := g.instanceFor(c, who, id)
		return err
	case "migration":
		ms, err := g.db.instanceMigrations(c, imigFilter{id: id}, "", 1)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return notFound("id", "unknown migration "+strconv.Quote(id))
		}
		if ms[0].Owner != who.Name {
			return g.deny(c, who, http.StatusForbidden, "migration "+id+" is of an instance that is not yours")
		}
		return nil
	}
	return g.deny(c, who, http.StatusForbidden, "only operators may read the history of a "+kind)
}

// entryOf says what a row's event changed.
func entryOf(r historyRow) wire.HistoryEntry {
	e := wire.HistoryEntry{Seq: r.Seq, ID: r.ID, Time: r.Time, Type: r.Type, Topic: r.Topic,
		Partition: r.Partition, Offset: r.Offset, Producer: r.Producer, Actor: r.Actor, Why: r.Why,
		Requester: r.Requester, RequesterWhy: r.RequesterWhy, Instance: r.Instance, Payload: r.Payload}
	if r.AskType == events.TypeMigrationActionRequested {
		e.Migration = r.RequestID
	} else {
		e.Request = r.RequestID
	}
	if e.Requester == "" {
		e.Requester, e.RequesterWhy = r.Actor, r.Why
	}
	describe(&e, r)
	return e
}

// describe fills the entry's change from its payload and the state event
// before it. A payload that does not decode (a type this build does not
// know) keeps only its type as summary.
func describe(e *wire.HistoryEntry, r historyRow) {
	e.Summary = r.Type
	switch r.Type {
	case events.TypeInstanceDeclared:
		var p events.InstanceDeclared
		if json.Unmarshal(r.Payload, &p) == nil {
			e.After = &wire.Placement{Primary: p.PrimaryNode, Secondary: p.SecondaryNode}
			e.To = string(p.RunState)
			e.Summary = fmt.Sprintf("declared on %s, %s, owner %q", placementString(*e.After), p.RunState, p.Owner)
		}
	case events.TypeInstancePlaced:
		var p events.InstancePlaced
		if json.Unmarshal(r.Payload, &p) == nil {
			e.Before = &wire.Placement{Group: p.PreviousGroup, Primary: p.PreviousPrimary, Secondary: p.PreviousSecondary}
			e.After = &wire.Placement{Group: p.Group, Primary: p.PrimaryNode, Secondary: p.SecondaryNode}
			e.Summary = fmt.Sprintf("placed: %s -> %s", placementString(*e.Before), placementString(*e.After))
		}
	case events.TypeNodeAnnounced, events.TypeNodeUpdated:
		var p, prev events.NodeAnnounced
		if json.Unmarshal(r.Payload, &p) == nil {
			e.To = nodeState(p)
			e.Summary = "node " + p.Name + ": " + e.To
			if len(r.Previous) > 0 && json.Unmarshal(r.Previous, &prev) == nil {
				e.From = nodeState(prev)
				e.Summary = fmt.Sprintf("node %s: %s -> %s", p.Name, e.From, e.To)
			}
		}
	case events.TypeMigrationStateChanged:
		var p, prev events.MigrationStateChanged
		if json.Unmarshal(r.Payload, &p) == nil {
			e.To = string(p.State)
			e.Summary = fmt.Sprintf("migration %s of %s (%s -> %s): %s", p.Migration, p.Instance, p.Source, p.Target, p.State)
			if len(r.Previous) > 0 && json.Unmarshal(r.Previous, &prev) == nil {
				e.From = string(prev.State)
				e.Summary = fmt.Sprintf("migration %s of %s (%s -> %s): %s -> %s", p.Migration, p.Instance, p.Source, p.Target, prev.State, p.State)
			}
		}
	default:
		e.Summary = summarizeEvent(r.Type, r.Payload)
	}
}

func nodeState(n events.NodeAnnounced) string {
	var s []string
	if n.Offline {
		s = append(s, "offline")
	} else {
		s = append(s, "online")
	}
	if n.Drained {
		s = append(s, "drained")
	}
	return strings.Join(s, ", ")
}

// summarizeEvent is the line of the events whose change is their type and
// a few fields.
func summarizeEvent(typ string, raw json.RawMessage) string {
	var f struct {
		Request, Instance, Node, Status, Error, Reason, Phase, Action, Target, Outcome, Detail string
		Job, Index                                                                             int
		Nodes                                                                                  []string
		Opcode                                                                                 struct{ From, To string }
		Refused                                                                                bool // a node action's answer
	}
	if json.Unmarshal(raw, &f) != nil {
		return typ
	}
	parts := []string{typ}
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+" "+v)
		}
	}
	add("instance", f.Instance)
	if len(f.Nodes) > 0 {
		add("nodes", strings.Join(f.Nodes, ","))
	}
	if f.Opcode.From != "" || f.Opcode.To != "" {
		add("move", f.Opcode.From+" -> "+f.Opcode.To)
	}
	add("node", f.Node)
	add("action", f.Action)
	add("target", f.Target)
	add("phase", f.Phase)
	add("status", f.Status)
	add("outcome", f.Outcome)
	if f.Refused {
		parts = append(parts, "refused")
	}
	add("reason", f.Reason)
	add("detail", f.Detail)
	add("error", f.Error)
	return strings.Join(parts, ": ")
}
