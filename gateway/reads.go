package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/drovehq/drove/gateway/wire"
)

// Paging: every list is ordered by its key and cut after the key given as
// ?after= (exclusive); ?limit= bounds the page. The answer's "next" is the
// after= of the following page, absent on the last one.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

type page struct {
	limit int
	after string
}

func parsePage(c *gin.Context) (page, error) {
	p := page{limit: defaultLimit, after: c.Query("after")}
	if s, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLimit {
			return p, badRequest("limit", "limit: "+strconv.Quote(s)+" is not a whole number from 1 to "+strconv.Itoa(maxLimit))
		}
		p.limit = n
	}
	return p, nil
}

// pageOf answers with items, which were fetched with limit+1 so we know
// whether there is a next page without a count.
func pageOf[T any](c *gin.Context, items []T, p page, key func(T) string) error {
	out := wire.Page[T]{Items: items}
	if out.Items == nil {
		out.Items = []T{}
	}
	if len(items) > p.limit {
		out.Items = items[:p.limit]
		out.Next = key(out.Items[p.limit-1])
	}
	return writeJSON(c, http.StatusOK, out)
}

// oneOfQuery reads an optional query parameter that must be one of allowed.
// Given empty (?status=) it is refused like any other value outside the
// list, as the OpenAPI document's enum says: absent is the way to ask for
// no filter (found by schemathesis).
func oneOfQuery(c *gin.Context, name string, allowed ...string) (string, error) {
	v, given := c.GetQuery(name)
	if given && !slices.Contains(allowed, v) {
		return "", badRequest(name, name+": unknown value "+strconv.Quote(v)+" (want one of "+strings.Join(allowed, ", ")+")")
	}
	return v, nil
}

// Values of the derived states, as the views compute them.
var (
	requestStatuses = []string{"accepted", "planning", "awaiting-approval", "running", "cancelling", "finished", "rejected"}
	requestKinds    = []string{kindEvacuation, kindGroupChange}
	jobStates       = []string{"waiting", "running", "success", "error", "canceled"}
	migrationStates = []string{"queued", "scheduled", "running", "paused", "successful", "failed", "aborted"}
)

func (g *Gateway) listRequests(c *gin.Context) error {
	p, err := parsePage(c)
	if err != nil {
		return err
	}
	status, err := oneOfQuery(c, "status", requestStatuses...)
	if err != nil {
		return err
	}
	kind, err := oneOfQuery(c, "kind", requestKinds...)
	if err != nil {
		return err
	}
	rs, err := many[wire.Request](c, g.db, "requests_list", status, kind, p.after, p.limit+1)
	if err != nil {
		return err
	}
	return pageOf(c, rs, p, func(r wire.Request) string { return r.ID })
}

func (g *Gateway) getRequest(c *gin.Context) error {
	id := c.Param("id")
	r, err := g.db.request(c, id)
	if errors.Is(err, ErrNotFound) {
		// Appended here but not in the views yet: say so rather than 404.
		if rc, ok := g.recent.get(id); ok {
			g.answer(c, http.StatusOK, wire.RequestDetail{Request: rc.asRequest(id), Jobs: []wire.JobState{}, Links: linksFor(id, rc.dryRun),
				Message: "accepted; the views have not caught up with it yet"})
			return nil
		}
		return notFound("id", "unknown request "+strconv.Quote(id))
	}
	if err != nil {
		return err
	}
	d := wire.RequestDetail{Request: r, Jobs: []wire.JobState{}, Links: linksFor(id, r.DryRun)}
	pl, err := g.db.plan(c, id)
	planned := err == nil
	switch {
	case planned:
		d.Plan = summarize(pl)
	case !errors.Is(err, ErrNotFound):
		return err
	}
	jobs, err := many[wire.Job](c, g.db, "jobs_list", id, "", "", -1, maxLimit*100)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		d.Jobs = append(d.Jobs, wire.JobState{Index: j.Index, Instance: j.Instance, State: j.State, Error: j.Error})
	}
	if planned && r.FinishedAt == nil && r.RejectedAt == nil {
		if d.Estimate, err = g.requestEstimate(c, r, pl, jobs, time.Now()); err != nil {
			return err
		}
	}
	if r.FinishedAt != nil {
		d.Outcome = &wire.Outcome{Moved: jsonOr(r.Moved, "[]"), Failed: jsonOr(r.Failed, "[]")}
	}
	g.answer(c, http.StatusOK, d)
	return nil
}

func summarize(p wire.PlanRow) *wire.PlanSummary {
	count := func(raw json.RawMessage) int {
		var xs []json.RawMessage
		_ = json.Unmarshal(raw, &xs) // the projector wrote a JSON array; anything else counts 0
		return len(xs)
	}
	return &wire.PlanSummary{
		Moved: count(p.Moved), Failed: count(p.Failed), Jobs: count(p.Jobs),
		ScoreBefore: p.ScoreBefore, ScoreAfter: p.ScoreAfter,
		ComputedAt: p.ComputedAt.UTC().Format("2006-01-02T15:04:05.999999999Z07:00"),
	}
}

func jsonOr(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(def)
	}
	return raw
}

// requireRequest answers 404 for a request the views do not know.
func (g *Gateway) requireRequest(c *gin.Context, id string) (wire.Request, error) {
	r, err := g.db.request(c, id)
	if errors.Is(err, ErrNotFound) {
		return r, notFound("id", "unknown request "+strconv.Quote(id))
	}
	return r, err
}

func (g *Gateway) getPlan(c *gin.Context) error {
	id := c.Param("id")
	r, err := g.requireRequest(c, id)
	if err != nil {
		return err
	}
	p, err := g.db.plan(c, id)
	if errors.Is(err, ErrNotFound) {
		return notFound("id", "request "+strconv.Quote(id)+" has no plan yet")
	}
	if err != nil {
		return err
	}
	if r.DryRun { // for review: each move's predicted downtime
		if p.Moves, err = g.planDowntimes(c, p); err != nil {
			return err
		}
	}
	g.answer(c, http.StatusOK, p)
	return nil
}

func (g *Gateway) getRequestJobs(c *gin.Context) error {
	id := c.Param("id")
	p, err := parsePage(c)
	if err != nil {
		return err
	}
	after := -1
	if p.after != "" {
		if after, err = strconv.Atoi(p.after); err != nil || after < -1 {
			return badRequest("after", "after: "+strconv.Quote(p.after)+" is not a job index")
		}
	}
	state, err := oneOfQuery(c, "status", jobStates...)
	if err != nil {
		return err
	}
	if _, err := g.requireRequest(c, id); err != nil {
		return err
	}
	jobs, err := many[wire.Job](c, g.db, "jobs_list", id, state, id, after, p.limit+1)
	if err != nil {
		return err
	}
	return pageOf(c, jobs, p, func(j wire.Job) string { return strconv.Itoa(j.Index) })
}

// listJobs pages over (request, index); its cursor is "request/index".
func (g *Gateway) listJobs(c *gin.Context) error {
	p, err := parsePage(c)
	if err != nil {
		return err
	}
	state, err := oneOfQuery(c, "status", jobStates...)
	if err != nil {
		return err
	}
	afterReq, afterIdx := "", -1
	if p.after != "" {
		i := strings.LastIndexByte(p.after, '/')
		n, perr := strconv.Atoi(p.after[i+1:])
		if i < 0 || perr != nil || n < 0 {
			return badRequest("after", "after: "+strconv.Quote(p.after)+" is not a job cursor (request/index)")
		}
		afterReq, afterIdx = p.after[:i], n
	}
	jobs, err := many[wire.Job](c, g.db, "jobs_list", c.Query("request"), state, afterReq, afterIdx, p.limit+1)
	if err != nil {
		return err
	}
	return pageOf(c, jobs, p, func(j wire.Job) string { return j.Request + "/" + strconv.Itoa(j.Index) })
}

// listMigrations lists what the API calls migrations (RFD 34's
// /migrations), by id: the moves of bulk requests (kind opcode, id
// request/job/index) and per-instance migrations (kind instance). Owners
// see only their instances'.
func (g *Gateway) listMigrations(c *gin.Context) error {
	p, err := parsePage(c)
	if err != nil {
		return err
	}
	state, err := oneOfQuery(c, "state", migrationStates...)
	if err != nil {
		return err
	}
	kind, err := oneOfQuery(c, "kind", "instance", "opcode")
	if err != nil {
		return err
	}
	owner := c.Query("owner")
	if who := callerOf(c); !who.operator() {
		if owner != "" && owner != who.Name {
			return g.deny(c, who, http.StatusForbidden, "you may list only your own migrations (owner="+who.Name+")")
		}
		owner = who.Name
	}
	var items []migrationItem
	if kind != "instance" {
		ms, err := many[wire.Move](c, g.db, "moves_list", c.Query("instance"), state, c.Query("node"), p.after, p.limit+1, owner)
		if err != nil {
			return err
		}
		for _, m := range ms {
			m.Kind = "opcode"
			items = append(items, migrationItem{id: m.ID, v: m})
		}
	}
	if kind != "opcode" {
		ms, err := g.db.instanceMigrations(c, imigFilter{instance: c.Query("instance"), state: state, owner: owner, node: c.Query("node")}, p.after, p.limit+1)
		if err != nil {
			return err
		}
		for _, m := range ms {
			items = append(items, migrationItem{id: m.ID, v: m})
		}
	}
	slices.SortFunc(items, func(a, b migrationItem) int { return strings.Compare(a.id, b.id) })
	if len(items) > p.limit+1 {
		items = items[:p.limit+1]
	}
	return pageOf(c, items, p, func(m migrationItem) string { return m.id })
}

// migrationItem is either kind of migration in a list.
type migrationItem struct {
	id string
	v  any
}

func (m migrationItem) MarshalJSON() ([]byte, error) { return json.Marshal(m.v) }

// getMigration answers one migration: a per-instance one by its id, a
// move of a bulk request by request/job/index.
func (g *Gateway) getMigration(c *gin.Context) error {
	who := callerOf(c)
	if c.Param("job") == "" && strings.Count(c.Param("id"), "/") != 2 {
		id := c.Param("id")
		ms, err := g.db.instanceMigrations(c, imigFilter{id: id}, "", 1)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return notFound("id", "unknown migration "+strconv.Quote(id))
		}
		m := ms[0]
		if !who.operator() && m.Owner != who.Name {
			return g.deny(c, who, http.StatusForbidden, "migration "+id+" is of an instance that is not yours")
		}
		rows, err := g.history("imig_history", 0, m.Instance, id).all(c)
		if err != nil {
			return err
		}
		m.History = []wire.ProgressRecord{}
		for _, r := range rows {
			m.History = append(m.History, wire.ProgressRecord{Seq: r.Seq, Time: r.Time, Type: r.Type, Payload: r.Payload})
		}
		g.answer(c, http.StatusOK, m)
		return nil
	}
	id := c.Param("id")
	if c.Param("job") != "" {
		id += "/" + c.Param("job") + "/" + c.Param("idx")
	}
	m, err := g.db.move(c, id)
	if errors.Is(err, ErrNotFound) {
		return notFound("id", "unknown migration "+strconv.Quote(id))
	}
	if err != nil {
		return err
	}
	if !who.operator() && m.Account != who.Name {
		return g.deny(c, who, http.StatusForbidden, "migration "+id+" is of an instance that is not yours")
	}
	m.Kind = "opcode"
	if m.History == nil {
		m.History = []wire.ProgressRecord{}
	}
	g.answer(c, http.StatusOK, m)
	return nil
}

func (g *Gateway) listNodes(c *gin.Context) error {
	p, err := parsePage(c)
	if err != nil {
		return err
	}
	drained, err := oneOfQuery(c, "drained", "true", "false")
	if err != nil {
		return err
	}
	db, err := g.storeAt(c)
	if err != nil {
		return err
	}
	ns, err := many[wire.Node](c, db, "nodes_list", c.Query("group"), drained, p.after, "", p.limit+1)
	if err != nil {
		return err
	}
	return pageOf(c, ns, p, func(n wire.Node) string { return n.Name })
}

func (g *Gateway) getNode(c *gin.Context) error {
	name := c.Param("name")
	n, err := one[wire.Node](c, g.db, "nodes_list", "", "", "", name, 1)
	if errors.Is(err, ErrNotFound) {
		return notFound("name", "unknown node "+strconv.Quote(name))
	}
	if err != nil {
		return err
	}
	g.answer(c, http.StatusOK, n)
	return nil
}

func (g *Gateway) listInstances(c *gin.Context) error {
	p, err := parsePage(c)
	if err != nil {
		return err
	}
	owner := c.Query("owner")
	if who := callerOf(c); !who.operator() {
		if owner != "" && owner != who.Name {
			return g.deny(c, who, http.StatusForbidden, "you may list only your own instances (owner="+who.Name+")")
		}
		owner = who.Name
	}
	db, err := g.storeAt(c)
	if err != nil {
		return err
	}
	is, err := many[wire.Instance](c, db, "instances_list", c.Query("node"), c.Query("group"), owner, p.after, "", p.limit+1)
	if err != nil {
		return err
	}
	return pageOf(c, is, p, func(i wire.Instance) string { return i.Name })
}

func (g *Gateway) getInstance(c *gin.Context) error {
	i, err := g.instanceFor(c, callerOf(c), c.Param("name"))
	if err != nil {
		return err
	}
	g.answer(c, http.StatusOK, i)
	return nil
}

func (g *Gateway) listGroups(c *gin.Context) error {
	p, err := parsePage(c)
	if err != nil {
		return err
	}
	gs, err := many[wire.Group](c, g.db, "groups_list", p.after, p.limit+1)
	if err != nil {
		return err
	}
	return pageOf(c, gs, p, func(gr wire.Group) string { return gr.Name })
}
