package gateway

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/progress"
	"github.com/drovehq/drove/gateway/wire"
)

// GET /v1/instances/{name}/migrate/watch streams RFD 34's progress and
// end events of the instance's current migration (or its latest, or the
// one named by ?migration=): the history first, then live ones from the
// shared tailer, until the end event of a final phase (a switch,
// abort, rollback or finalize that ended, anything failed) or of a pause.
// Percent is the watcher's promise: it never goes backwards within a
// phase, even when the total grows because the instance wrote more data.

// percenter keeps each phase's percent from going backwards.
type percenter struct {
	last  map[int]float64
	total map[int]int64
}

func (pc *percenter) line(r logRow, id string) (wire.MigrationLine, bool, error) {
	l := wire.MigrationLine{Migration: id, Seq: r.Seq, Time: r.Time.UTC(), Instance: r.Instance}
	switch r.Type {
	case events.TypeEnd:
		var e events.End
		if err := json.Unmarshal(r.Payload, &e); err != nil {
			return l, false, err
		}
		l.Type, l.Index, l.Node, l.Phase, l.State, l.Message = "end", e.Index, e.Node, e.Phase, string(e.State), e.Message
		return l, finalEnd(e), nil
	case events.TypeProgress:
	default:
		return l, false, fmt.Errorf("not a progress or end event: %s", r.Type)
	}
	var p events.Progress
	if err := json.Unmarshal(r.Payload, &p); err != nil {
		return l, false, err
	}
	l.Type, l.Index, l.Node, l.Phase, l.State = "progress", p.Index, p.Node, p.Phase, string(p.State)
	l.Current, l.Total, l.Message, l.Error = &p.Current, &p.Total, p.Message, p.Error
	if !p.Started.IsZero() {
		st := p.Started.UTC()
		l.Started = &st
	}
	l.Duration = int64(p.DurationSeconds * 1000)
	l.ETA = int64(p.ETASeconds * 1000)
	l.Rate = p.BytesPerSecond
	if p.Total > 0 {
		pct := min(100, float64(p.Current)*100/float64(p.Total))
		if pc.last == nil {
			pc.last, pc.total = map[int]float64{}, map[int]int64{}
		}
		prev, seen := pc.last[p.Index]
		if seen && pct < prev {
			if p.Total > pc.total[p.Index] {
				grew := fmt.Sprintf("total grew to %d bytes (the instance wrote more data); percent held at %.1f, ETA recomputed",
					p.Total, prev)
				if l.Message != "" {
					grew = l.Message + "; " + grew
				}
				l.Message = grew
				if p.BytesPerSecond > 0 {
					l.ETA = (p.Total - p.Current) * 1000 / p.BytesPerSecond
				}
			}
			pct = prev
		}
		pc.last[p.Index] = pct
		pc.total[p.Index] = max(pc.total[p.Index], p.Total)
		pct = float64(int(pct*10)) / 10
		l.Percent = &pct
	}
	return l, false, nil
}

// finalEnd says an end event ends a watch: a pause, a failure, or the
// success of a phase after which nothing runs on its own (begin and sync
// succeed on the way of an automatic migration).
func finalEnd(e events.End) bool {
	switch e.State {
	case events.EndPaused, events.EndFailed:
		return true
	}
	return e.Phase != events.PhaseBegin && e.Phase != events.PhaseSync
}

func (g *Gateway) watchMigration(c *gin.Context) error {
	name := c.Param("name")
	steps, err := migrationSteps(c)
	if err != nil {
		return err
	}
	if _, err := g.instanceFor(c, callerOf(c), name); err != nil {
		return err
	}
	m, err := g.watchedMigration(c, name)
	if err != nil {
		return err
	}
	id := m.ID
	release, err := g.admitWatcher()
	if err != nil {
		return err
	}
	defer release()
	sub, err := g.tail.subscribe(c, migRows(name, id), g.cfg.WatchBuffer)
	if err != nil {
		return err
	}
	defer sub.close()
	hist := g.history("imig_history", 0, name, id)
	rows, err := hist.next(c) // the first page before the status, so a failure is a 5xx
	if err != nil {
		return err
	}
	s, done := g.startStream(c, map[string]string{"X-Drove-Migration": id})
	defer done()

	// The stream ends on an end event that is final by itself (finalEnd),
	// or once the phase that ran has ended and the record says nothing
	// runs now (paused, scheduled, or ended): then it waits settleWait for
	// a last end event the coordinator may still write (a pause's).
	ws := &migStream{g: g, c: c, s: s, id: id, watchState: watchState{state: m.State, steps: steps}, recheck: time.NewTicker(time.Second)}
	defer ws.recheck.Stop()
	sent := map[int64]bool{}
	for ; len(rows) > 0; rows, err = hist.next(c) {
		if !ws.history(rows, sent) {
			return nil
		}
	}
	if err != nil {
		g.historyFailed(c, s, err)
		return nil
	}
	if ws.final || ws.closed && ws.idle() {
		return nil
	}
	g.follow(c, s, sub, sent, min(g.cfg.KeepAlive, 60*time.Second), ws)
	return nil
}

// migrationSteps is what ?rows=steps asks of a migration's stream: each
// line carries the step it changed, as gateway/progress folds the lines
// this stream sent (so the console draws steps and folds nothing). Nil
// when not asked: the lines are then RFD 34's alone.
func migrationSteps(c *gin.Context) (*progress.Migration, error) {
	switch r := c.Query("rows"); r {
	case "":
		return nil, nil
	case "steps":
		return &progress.Migration{}, nil
	default:
		return nil, badRequest("rows", "rows: unknown value "+strconv.Quote(r)+" (want steps)")
	}
}

// watchedMigration is the migration a watch follows: the one named by
// ?migration=, else the instance's current or latest one; one accepted
// here a moment ago counts even before the views show it.
func (g *Gateway) watchedMigration(c *gin.Context, name string) (*wire.InstanceMigration, error) {
	id := c.Query("migration")
	if id == "" {
		m, err := g.db.currentMigration(c, name)
		if err != nil || m != nil {
			return m, err
		}
		if p, ok := g.pending.get(name); ok {
			return &wire.InstanceMigration{MigrationRecord: wire.MigrationRecord{ID: p.id, Instance: name, State: string(events.MigrationQueued)}}, nil
		}
		return nil, notFound("name", "instance "+strconv.Quote(name)+" has no migration")
	}
	ms, err := g.db.instanceMigrations(c, imigFilter{id: id, instance: name}, "", 1)
	if err != nil {
		return nil, err
	}
	switch p, ok := g.pending.get(name); {
	case len(ms) > 0:
		return &ms[0], nil
	case ok && p.id == id: // just accepted here; the views lag
		return &wire.InstanceMigration{MigrationRecord: wire.MigrationRecord{ID: id, Instance: name, State: string(events.MigrationQueued)}}, nil
	}
	return nil, notFound("migration", "instance "+strconv.Quote(name)+" has no migration "+strconv.Quote(id))
}

// migRows matches the log rows of migration id of instance name: its
// progress and end events, and its record's state changes.
func migRows(name, id string) func(logRow) bool {
	return func(r logRow) bool {
		switch r.Type {
		case events.TypeMigrationStateChanged:
			// Followed for its state (the stream's end); its instance
			// column may be empty, so match on the payload.
		case events.TypeProgress, events.TypeEnd:
			if r.Instance != name {
				return false
			}
		default:
			return false
		}
		var ref struct {
			Request   string `json:"request"`
			Migration string `json:"migration"`
		}
		return json.Unmarshal(r.Payload, &ref) == nil && (ref.Request == id || ref.Migration == id)
	}
}

// migStream is the live part of a migration's stream.
type migStream struct {
	g       *Gateway
	c       *gin.Context
	s       *ndjson
	id      string
	recheck *time.Ticker
	settle  <-chan time.Time // set once the migration stopped running
	watchState
}

func (ws *migStream) row(r logRow) bool {
	if r.Type == events.TypeMigrationStateChanged {
		var rec events.MigrationStateChanged
		if json.Unmarshal(r.Payload, &rec) == nil {
			ws.state = string(rec.State)
		}
	} else {
		l, final, err := ws.line(r)
		if err != nil {
			return false
		}
		if !ws.s.write(l) || final {
			return true
		}
		ws.closed = l.Type == "end"
	}
	if ws.settle == nil && ws.closed && ws.idle() {
		ws.settle = time.After(settleWait)
	}
	return false
}

// timer: the settle wait once it runs; else, after an end line, a
// recheck of the record every second (its state change may come late).
func (ws *migStream) timer() <-chan time.Time {
	switch {
	case ws.settle != nil:
		return ws.settle
	case ws.closed:
		return ws.recheck.C
	}
	return nil
}

func (ws *migStream) wake() bool {
	if ws.settle != nil {
		return true // settled: no end event is on its way any more
	}
	ms, err := ws.g.db.instanceMigrations(ws.c, imigFilter{id: ws.id}, "", 1)
	if err == nil && len(ms) > 0 {
		ws.state = ms[0].State
		if ws.idle() {
			ws.settle = time.After(settleWait)
		}
	}
	return false
}

// settleWait is how long a watch stream waits, once its migration stopped
// running, for an end event still on its way.
const settleWait = time.Second

// watchState is what a migration watch stream knows of its migration.
type watchState struct {
	pc     percenter
	steps  *progress.Migration // the fold for ?rows=steps; nil when not asked
	state  string              // the record's latest state
	closed bool                // the last progress or end line was an end
	final  bool                // ... and it ended the migration or paused it
}

// line is row r as a line of the stream, with the step it changed when
// the watcher asked for steps.
func (ws *migStream) line(r logRow) (wire.MigrationLine, bool, error) {
	l, final, err := ws.pc.line(r, ws.id)
	if err == nil && ws.steps != nil {
		l.Steps = []wire.MigrationStep{*ws.steps.Apply(l)}
	}
	return l, final, err
}

// idle says the record has nothing running: the stream may end once the
// phase it followed has ended.
func (ws watchState) idle() bool {
	return ws.state != string(events.MigrationRunning) && ws.state != string(events.MigrationQueued)
}

// history sends a page of the migration's history; false means the
// watcher is gone.
func (ws *migStream) history(rows []logRow, sent map[int64]bool) bool {
	for _, r := range rows {
		l, final, err := ws.line(r)
		if err != nil {
			ws.g.log.Warn("migration watch: undecodable row", "seq", r.Seq, "err", err)
			continue
		}
		if !ws.s.write(l) {
			return false
		}
		sent[r.Seq] = true
		ws.closed, ws.final = l.Type == "end", final
	}
	return true
}
