package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/drovehq/drove/events"
)

// GET /v1/instances/{name}/migrate/watch streams RFD 34's progress and
// end events of the instance's current migration (or its latest, or the
// one named by ?migration=): the history first, then live ones from the
// shared tailer, until the end event of a final phase (a switch,
// abort, rollback or finalize that ended, anything failed) or of a pause.
// Percent is the watcher's promise: it never goes backwards within a
// phase, even when the total grows because the instance wrote more data.

// migLine is one line of a migration watch stream, in RFD 34's words.
type migLine struct {
	Type      string     `json:"type"` // progress or end
	Migration string     `json:"migration"`
	Instance  string     `json:"instance"`
	Seq       int64      `json:"seq"`
	Time      time.Time  `json:"time"`
	Index     int        `json:"index"`
	Node      string     `json:"node,omitempty"`
	Phase     string     `json:"phase"`
	State     string     `json:"state"`
	Current   *int64     `json:"current_progress,omitempty"`
	Total     *int64     `json:"total_progress,omitempty"`
	Percent   *float64   `json:"percent,omitempty"`
	Message   string     `json:"message,omitempty"`
	Error     string     `json:"error,omitempty"`
	Started   *time.Time `json:"started_timestamp,omitempty"`
	Duration  int64      `json:"duration_ms,omitempty"`
	ETA       int64      `json:"eta_ms,omitempty"`
	Rate      int64      `json:"transfer_bytes_second,omitempty"`
}

// percenter keeps each phase's percent from going backwards.
type percenter struct {
	last  map[int]float64
	total map[int]int64
}

func (pc *percenter) line(r logRow, id string) (migLine, bool, error) {
	l := migLine{Migration: id, Seq: r.Seq, Time: r.Time.UTC(), Instance: r.Instance}
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
	who := callerOf(c)
	if _, err := g.instanceFor(c, who, name); err != nil {
		return err
	}
	var m *instanceMigration
	if id := c.Query("migration"); id != "" {
		ms, err := g.db.instanceMigrations(c, imigFilter{id: id, instance: name}, "", 1)
		if err != nil {
			return err
		}
		switch p, ok := g.pending.get(name); {
		case len(ms) > 0:
			m = &ms[0]
		case ok && p.id == id: // just accepted here; the views lag
			m = &instanceMigration{ID: id, Instance: name, State: string(events.MigrationQueued)}
		default:
			return notFound("migration", "instance "+strconv.Quote(name)+" has no migration "+strconv.Quote(id))
		}
	} else {
		var err error
		if m, err = g.db.currentMigration(c, name); err != nil {
			return err
		}
		if m == nil {
			if p, ok := g.pending.get(name); ok {
				m = &instanceMigration{ID: p.id, Instance: name, State: string(events.MigrationQueued)}
			} else {
				return notFound("name", "instance "+strconv.Quote(name)+" has no migration")
			}
		}
	}
	id := m.ID
	match := func(r logRow) bool {
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
	sub, err := g.tail.subscribe(c, match, g.cfg.WatchBuffer)
	if err != nil {
		return err
	}
	defer sub.close()
	rows, err := many[logRow](c, g.db, "imig_history", name, id)
	if err != nil {
		return err
	}

	g.metrics.watches.Inc()
	defer g.metrics.watches.Dec()
	w := c.Writer
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.Header().Set("X-Drove-Migration", id)
	w.WriteHeader(http.StatusOK)
	w.Flush()
	enc := json.NewEncoder(w)
	write := func(v any) bool {
		if err := enc.Encode(v); err != nil {
			return false
		}
		w.Flush()
		return true
	}

	// The stream ends on an end event that is final by itself (finalEnd),
	// or once the phase that ran has ended and the record says nothing
	// runs now (paused, scheduled, or ended): then it waits settleWait for
	// a last end event the coordinator may still write (a pause's).
	ws := watchState{state: m.State}
	sent := make(map[int64]bool, len(rows))
	for _, r := range rows {
		l, final, err := ws.pc.line(r, id)
		if err != nil {
			g.log.Warn("migration watch: undecodable row", "seq", r.Seq, "err", err)
			continue
		}
		if !write(l) {
			return nil
		}
		sent[r.Seq] = true
		ws.closed, ws.final = l.Type == "end", final
	}
	if ws.final || ws.closed && ws.idle() {
		return nil
	}
	keepalive := time.NewTicker(min(g.cfg.KeepAlive, 60*time.Second))
	defer keepalive.Stop()
	recheck := time.NewTicker(time.Second)
	defer recheck.Stop()
	var settle <-chan time.Time
	for {
		select {
		case r := <-sub.ch:
			if sent[r.Seq] {
				continue
			}
			sent[r.Seq] = true
			if r.Type == events.TypeMigrationStateChanged {
				var rec events.MigrationStateChanged
				if json.Unmarshal(r.Payload, &rec) == nil {
					ws.state = string(rec.State)
				}
			} else {
				l, final, err := ws.pc.line(r, id)
				if err != nil {
					continue
				}
				if !write(l) || final {
					return nil
				}
				ws.closed = l.Type == "end"
			}
			if settle == nil && ws.closed && ws.idle() {
				settle = time.After(settleWait)
			}
		case <-recheck.C:
			if settle != nil || !ws.closed {
				continue
			}
			ms, err := g.db.instanceMigrations(c, imigFilter{id: id}, "", 1)
			if err == nil && len(ms) > 0 {
				ws.state = ms[0].State
				if ws.idle() {
					settle = time.After(settleWait)
				}
			}
		case <-settle:
			return nil
		case <-sub.cut:
			g.metrics.watchCut.Inc()
			write(g.tooSlowLine())
			return nil
		case <-keepalive.C:
			if !write(controlLine{Type: "keepalive"}) {
				return nil
			}
		case <-g.closing:
			write(shuttingDownLine)
			return nil
		case <-c.Done():
			return nil
		}
	}
}

// settleWait is how long a watch stream waits, once its migration stopped
// running, for an end event still on its way.
const settleWait = time.Second

// watchState is what a migration watch stream knows of its migration.
type watchState struct {
	pc     percenter
	state  string // the record's latest state
	closed bool   // the last progress or end line was an end
	final  bool   // ... and it ended the migration or paused it
}

// idle says the record has nothing running: the stream may end once the
// phase it followed has ended.
func (ws watchState) idle() bool {
	return ws.state != string(events.MigrationRunning) && ws.state != string(events.MigrationQueued)
}
