package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway/wire"
)

const (
	actorHeader  = "X-Drove-Actor"
	defaultActor = "operator"

	// Request kinds as the views spell them.
	kindEvacuation  = "evacuation"
	kindGroupChange = "group-change"

	// appendTimeout bounds an append. It runs detached from the client's
	// context: a client hanging up must not leave the command half done.
	appendTimeout = 30 * time.Second
)

var evacModes = []string{string(events.EvacPrimaryOnly), string(events.EvacSecondaryOnly), string(events.EvacAll)}

func linksFor(id string, dryRun bool) wire.Links {
	base := "/v1/requests/" + id
	l := wire.Links{"self": base, "plan": base + "/plan", "jobs": base + "/jobs", "watch": base + "/watch", "cancel": base + "/cancel"}
	if dryRun {
		l["approve"] = base + "/approve"
	}
	return l
}

func actorOf(c *gin.Context) string {
	if a := strings.TrimSpace(c.GetHeader(actorHeader)); a != "" {
		return a
	}
	return defaultActor
}

// names checks a list of names: none empty, none twice.
func names(field string, xs []string, required bool) error {
	if required && len(xs) == 0 {
		return badRequest(field, field+": missing (want at least one)")
	}
	seen := map[string]int{}
	for i, x := range xs {
		f := fmt.Sprintf("%s[%d]", field, i)
		if strings.TrimSpace(x) == "" {
			return badRequest(f, f+": empty")
		}
		if j, dup := seen[x]; dup {
			return badRequest(f, fmt.Sprintf("%s: %q is also %s[%d]", f, x, field, j))
		}
		seen[x] = i
	}
	return nil
}

// unknown returns a 404 naming the first of xs missing from known, and
// every missing one in the message.
func unknown(field, what string, xs, known []string) error {
	var missing []string
	first := -1
	for i, x := range xs {
		if !slices.Contains(known, x) {
			missing = append(missing, strconv.Quote(x))
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return nil
	}
	return notFound(fmt.Sprintf("%s[%d]", field, first), fmt.Sprintf("unknown %s %s", what, strings.Join(missing, ", ")))
}

func (g *Gateway) postEvacuation(c *gin.Context) error {
	var b wire.Evacuation
	if err := decodeBody(c, &b, false); err != nil {
		return err
	}
	if err := names("nodes", b.Nodes, true); err != nil {
		return err
	}
	if !slices.Contains(evacModes, b.Mode) {
		msg := fmt.Sprintf("mode: unknown value %q (want one of %s)", b.Mode, strings.Join(evacModes, ", "))
		if b.Mode == "" {
			msg = "mode: missing (want one of " + strings.Join(evacModes, ", ") + ")"
		}
		return badRequest("mode", msg)
	}
	if b.MaxMovesPerNode < 0 {
		return badRequest("max_moves_per_node", fmt.Sprintf("max_moves_per_node: negative (%d); 0 means the service default", b.MaxMovesPerNode))
	}
	if b.MaxMovesPerNode > events.MaxViewInt {
		return badRequest("max_moves_per_node", fmt.Sprintf("max_moves_per_node: %d is above %d", b.MaxMovesPerNode, events.MaxViewInt))
	}
	known, err := g.db.column(c, "nodes_known", b.Nodes)
	if err != nil {
		return err
	}
	if err := unknown("nodes", "node", b.Nodes, known); err != nil {
		return err
	}
	why := b.Reason
	if strings.TrimSpace(why) == "" {
		why = fmt.Sprintf("evacuate %s (%s)", strings.Join(b.Nodes, ", "), b.Mode)
	}
	mode := events.EvacMode(b.Mode)
	id := events.NewID()
	payload := events.EvacuationRequested{
		Request: id, Nodes: b.Nodes, Mode: mode, DryRun: b.DryRun,
		IgnoreSoftErrors: b.IgnoreSoftErrors, MaxMovesPerNode: b.MaxMovesPerNode,
	}
	entry := recentEntry{kind: kindEvacuation, nodes: b.Nodes, mode: b.Mode, dryRun: b.DryRun, actor: actorOf(c), why: why}

	primary := mode == events.EvacPrimaryOnly || mode == events.EvacAll
	secondary := mode == events.EvacSecondaryOnly || mode == events.EvacAll
	err = g.checkAndAppend(c, id, entry, payload, "nodes", func() ([]string, error) {
		return g.db.column(c, "instances_on_nodes", b.Nodes, primary, secondary)
	})
	if err != nil {
		return err
	}
	return g.answerAccepted(c, id, entry)
}

func (g *Gateway) postGroupChange(c *gin.Context) error {
	var b wire.GroupChange
	// target_groups: null is "any group", as absent: the Go client of
	// before sent it so.
	if err := decodeBody(c, &b, false, "target_groups"); err != nil {
		return err
	}
	if err := names("instances", b.Instances, true); err != nil {
		return err
	}
	if err := names("target_groups", b.TargetGroups, false); err != nil {
		return err
	}
	found, err := many[named](c, g.db, "instances_groups", b.Instances)
	if err != nil {
		return err
	}
	groupOf := map[string]string{}
	var knownNames []string
	for _, n := range found {
		groupOf[n.Name] = n.Group
		knownNames = append(knownNames, n.Name)
	}
	if err := unknown("instances", "instance", b.Instances, knownNames); err != nil {
		return err
	}
	if len(b.TargetGroups) > 0 {
		knownGroups, err := g.db.column(c, "groups_known", b.TargetGroups)
		if err != nil {
			return err
		}
		if err := unknown("target_groups", "group", b.TargetGroups, knownGroups); err != nil {
			return err
		}
	}
	// Ganeti's change-group moves instances of one group; say which differ.
	first := groupOf[b.Instances[0]]
	for i, in := range b.Instances[1:] {
		if gr := groupOf[in]; gr != first {
			return badRequest(fmt.Sprintf("instances[%d]", i+1), fmt.Sprintf(
				"instances: %q is in group %q but %q is in group %q; a group change moves instances of one group",
				b.Instances[0], first, in, gr))
		}
	}
	why := b.Reason
	if strings.TrimSpace(why) == "" {
		to := "any other group"
		if len(b.TargetGroups) > 0 {
			to = strings.Join(b.TargetGroups, " or ")
		}
		why = fmt.Sprintf("move %s to %s", strings.Join(b.Instances, ", "), to)
	}
	id := events.NewID()
	targets := b.TargetGroups
	if targets == nil {
		targets = []string{} // the event's schema wants an array
	}
	payload := events.GroupChangeRequested{Request: id, Instances: b.Instances, TargetGroups: targets, DryRun: b.DryRun}
	entry := recentEntry{kind: kindGroupChange, instances: b.Instances, targets: targets, dryRun: b.DryRun, actor: actorOf(c), why: why}

	err = g.checkAndAppend(c, id, entry, payload, "instances", func() ([]string, error) {
		return b.Instances, nil
	})
	if err != nil {
		return err
	}
	return g.answerAccepted(c, id, entry)
}

// checkAndAppend appends a new request's event unless an active request
// holds one of the instances held() lists. Check and append are one step
// within this gateway (commandMu), and the request is remembered until the
// views show it, so the next call's check sees it.
func (g *Gateway) checkAndAppend(ctx context.Context, id string, entry recentEntry, p events.Payload,
	field string, held func() ([]string, error)) error {
	g.commandMu.Lock()
	defer g.commandMu.Unlock()
	instances, err := held()
	if err != nil {
		return err
	}
	if err := g.checkClaims(ctx, field, instances); err != nil {
		return err
	}
	entry.instances = instances
	entry.at = time.Now()
	if err := g.append(ctx, id, entry.actor, entry.why, p); err != nil {
		return err
	}
	g.recent.add(id, entry)
	g.log.Info("request accepted", "request", id, "kind", entry.kind, "actor", entry.actor,
		"nodes", entry.nodes, "mode", entry.mode, "instances", len(instances), "dry_run", entry.dryRun)
	return nil
}

// checkClaims answers 409 if an active request holds any of instances:
// one the views show, or one this gateway appended that they do not show
// yet. The caller holds commandMu.
func (g *Gateway) checkClaims(ctx context.Context, field string, instances []string) error {
	if len(instances) == 0 {
		return nil
	}
	claims, err := many[claim](ctx, g.db, "active_claims", instances)
	if err != nil {
		return err
	}
	unseen, err := g.unseen(ctx)
	if err != nil {
		return err
	}
	for _, u := range unseen {
		for _, in := range u.instances {
			if slices.Contains(instances, in) {
				claims = append(claims, claim{Instance: in, Request: u.id})
			}
		}
	}
	if len(claims) == 0 {
		return g.checkNotMigrating(ctx, field, instances)
	}
	var parts []string
	for i, cl := range claims {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(claims)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("instance %q is part of active request %s", cl.Instance, cl.Request))
	}
	e := conflict(codeActive, field, strings.Join(parts, "; "))
	e.Instance, e.Request = claims[0].Instance, claims[0].Request
	return e
}

// answerAccepted answers an appended request: 202 at once, or for a dry
// run 200 with the plan once the views show it, each move with its
// predicted downtime.
func (g *Gateway) answerAccepted(c *gin.Context, id string, entry recentEntry) error {
	ans := wire.Accepted{Request: id, Status: "accepted", Links: linksFor(id, entry.dryRun)}
	if !entry.dryRun {
		g.answer(c, http.StatusAccepted, ans)
		return nil
	}
	pl, r, err := g.awaitPlan(c, id)
	switch {
	case errors.Is(err, ErrNotFound):
		ans.Message = fmt.Sprintf("the plan did not appear within %s; GET %s when it is ready", g.cfg.DryRunWait, ans.Links["plan"])
		g.answer(c, http.StatusAccepted, ans)
		return nil
	case err != nil:
		return err
	}
	if r.Status == "rejected" {
		ans.Status, ans.Message = "rejected", r.RejectedReason
		g.answer(c, http.StatusOK, ans)
		return nil
	}
	if pl.Moves, err = g.planDowntimes(c, pl); err != nil {
		return err
	}
	ans.Status, ans.Plan = "awaiting-approval", &pl
	g.answer(c, http.StatusOK, ans)
	return nil
}

// awaitPlan polls the views, backing off, until request id has a plan or
// has been rejected, or DryRunWait has passed (ErrNotFound).
func (g *Gateway) awaitPlan(ctx context.Context, id string) (wire.PlanRow, wire.Request, error) {
	deadline := time.Now().Add(g.cfg.DryRunWait)
	wait := 20 * time.Millisecond
	for {
		r, err := g.db.request(ctx, id)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return wire.PlanRow{}, r, err
		}
		if err == nil && r.Status == "rejected" {
			return wire.PlanRow{}, r, nil
		}
		p, err := g.db.plan(ctx, id)
		if !errors.Is(err, ErrNotFound) {
			return p, r, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return wire.PlanRow{}, r, ErrNotFound
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return wire.PlanRow{}, r, ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}

func (g *Gateway) postApprove(c *gin.Context) error {
	return g.transition(c, "approve", func(r wire.Request) error {
		if r.Status != "awaiting-approval" {
			return conflict(codeConflict, "id", fmt.Sprintf("request %s is %s, not awaiting approval", r.ID, r.Status))
		}
		return nil
	}, func(id string) events.Payload { return events.RequestApproved{Request: id} })
}

func (g *Gateway) postCancel(c *gin.Context) error {
	return g.transition(c, "cancel", func(r wire.Request) error {
		switch r.Status {
		case "finished", "rejected":
			return conflict(codeConflict, "id", fmt.Sprintf("request %s is %s; there is nothing to cancel", r.ID, r.Status))
		case "cancelling":
			return conflict(codeConflict, "id", fmt.Sprintf("request %s is already being cancelled", r.ID))
		}
		return nil
	}, func(id string) events.Payload { return events.RequestCancelled{Request: id} })
}

// transition appends an approval or a cancellation of an existing request
// if allowed says the request's status permits it.
func (g *Gateway) transition(c *gin.Context, verb string, allowed func(wire.Request) error, event func(string) events.Payload) error {
	id := c.Param("id")
	var b wire.Reason
	if err := decodeBody(c, &b, true); err != nil {
		return err
	}
	g.commandMu.Lock()
	defer g.commandMu.Unlock()
	r, err := g.db.request(c, id)
	if errors.Is(err, ErrNotFound) {
		if _, ok := g.recent.get(id); ok {
			return conflict(codeConflict, "id", fmt.Sprintf("request %s was just accepted and is not planned yet; %s it once it is", id, verb))
		}
		return notFound("id", "unknown request "+strconv.Quote(id))
	}
	if err != nil {
		return err
	}
	if err := allowed(r); err != nil {
		return err
	}
	actor := actorOf(c)
	why := b.Reason
	if strings.TrimSpace(why) == "" {
		why = verb + " requested by " + actor
	}
	if err := g.append(c, id, actor, why, event(id)); err != nil {
		return err
	}
	g.log.Info("request "+verb, "request", id, "actor", actor)
	g.answer(c, http.StatusAccepted, wire.Accepted{Request: id, Status: verb + " accepted", Links: linksFor(id, false)})
	return nil
}

// append writes one event for request id. Kafka's failures become 503s
// that say whether the event may have landed anyway.
func (g *Gateway) append(ctx context.Context, id, actor, why string, p events.Payload) error {
	env := events.New(p,
		events.WithReason(events.Reason{Actor: actor, Why: why, RequestID: id}),
		events.WithProducer(g.cfg.Producer))
	topic, err := env.Topic()
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appendTimeout)
	defer cancel()
	err = g.producer.Append(actx, topic, env)
	switch {
	case err == nil:
		g.metrics.appended.WithLabelValues(env.Type).Inc()
		return nil
	case errors.Is(err, events.ErrMalformed):
		return err // our bug: a 500, logged in full
	case errors.Is(err, kafka.ErrUncertain):
		g.log.Error("append outcome unknown", "request", id, "type", env.Type, "err", err)
		return uncertainAppend(id)
	default:
		g.log.Error("append failed", "request", id, "type", env.Type, "err", err)
		return &wire.Error{Status: http.StatusServiceUnavailable, Code: codeUnavailable,
			Message: "Kafka refused the append; nothing was recorded, so retrying is safe"}
	}
}

// uncertainAppend is the 503 of an append Kafka did not confirm: it may
// have landed. A request's says where to look before retrying; a change
// that is no request (settings, an instance's override) has no such page,
// and pointed at GET /v1/requests/ with no id.
func uncertainAppend(id string) *wire.Error {
	if id == "" {
		return &wire.Error{Status: http.StatusServiceUnavailable, Code: codeUnavailable,
			Message: "Kafka did not confirm the append; the change may or may not have been recorded: read it back before retrying"}
	}
	return &wire.Error{Status: http.StatusServiceUnavailable, Code: codeUnavailable, Request: id,
		Message: fmt.Sprintf("Kafka did not confirm the append; request %s may or may not have been recorded: GET /v1/requests/%s before retrying", id, id)}
}
