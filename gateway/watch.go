package gateway

import (
	"errors"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/progress"
	"github.com/drovehq/drove/gateway/wire"
)

func (g *Gateway) watchRequest(c *gin.Context) error {
	id := c.Param("id")
	add, err := jobRows(c)
	if err != nil {
		return err
	}
	if _, err := g.db.request(c, id); errors.Is(err, ErrNotFound) {
		if _, ok := g.recent.get(id); !ok {
			return notFound("id", "unknown request "+strconv.Quote(id))
		}
	} else if err != nil {
		return err
	}
	// A request's stream ends with its last word: finished or rejected.
	ends := func(r logRow) bool {
		return r.Type == events.TypeRequestFinished || r.Type == events.TypeRequestRejected
	}
	match := func(r logRow) bool { return r.RequestID == id || r.CorrelationID == id }
	return g.watch(c, "history_request", id, match, ends, add)
}

// jobRows is what ?rows=jobs adds to a request's stream: each event line
// carries the job rows it changed, as gateway/progress folds the lines
// this stream sent (so the console draws rows and folds nothing). Nil
// when not asked: the stream is then the events alone.
func jobRows(c *gin.Context) (func(*wire.WatchLine), error) {
	switch r := c.Query("rows"); r {
	case "":
		return nil, nil
	case "jobs":
	default:
		return nil, badRequest("rows", "rows: unknown value "+strconv.Quote(r)+" (want jobs)")
	}
	var p progress.Progress
	return func(l *wire.WatchLine) {
		if p.Apply(*l) {
			l.Jobs = p.Changed()
		}
	}, nil
}

func (g *Gateway) watchInstance(c *gin.Context) error {
	name := c.Param("name")
	if who := callerOf(c); !who.operator() {
		if _, err := g.instanceFor(c, who, name); err != nil {
			return err
		}
	}
	ok, err := g.db.instanceExists(c, name)
	if err != nil {
		return err
	}
	if !ok {
		return notFound("name", "unknown instance "+strconv.Quote(name))
	}
	match := func(r logRow) bool { return r.Instance == name }
	return g.watch(c, "history_instance", name, match, func(logRow) bool { return false }, nil)
}

// watch streams NDJSON: the history (query history with key, by seq, a page
// at a time, after ?after= when given), then, unless ?follow=false, live rows from the shared tailer until ends says a
// row was the last, the client leaves, the watcher falls behind, or the
// gateway shuts down. add, when not nil, adds to each line before it goes.
func (g *Gateway) watch(c *gin.Context, history, key string, match, ends func(logRow) bool, add func(*wire.WatchLine)) error {
	follow := true
	switch f := c.Query("follow"); f {
	case "", "true":
	case "false":
		follow = false
	default:
		return badRequest("follow", "follow: unknown value "+strconv.Quote(f)+" (want true or false)")
	}
	after, err := afterParam(c)
	if err != nil {
		return err
	}
	release, err := g.admitWatcher()
	if err != nil {
		return err
	}
	defer release()
	// Subscribe before reading the history, so nothing committed in
	// between is lost; rows seen in both are skipped by seq.
	var sub *subscription
	if follow {
		if sub, err = g.tail.subscribe(c, match, g.cfg.WatchBuffer); err != nil {
			return err
		}
		defer sub.close()
	}
	hist := g.history(history, after, key)
	rows, err := hist.next(c) // the first page before the status, so a failure is a 5xx
	if err != nil {
		return err
	}

	s, done := g.startStream(c, nil)
	defer done()
	line := func(r logRow) wire.WatchLine {
		l := wire.WatchLine{Seq: r.Seq, Time: r.Time.UTC(), Type: r.Type, Request: r.request(), Instance: r.Instance, Payload: r.Payload}
		if add != nil {
			add(&l)
		}
		return l
	}
	sent := map[int64]bool{}
	for ; len(rows) > 0; rows, err = hist.next(c) {
		for _, r := range rows {
			if !s.write(line(r)) {
				return nil
			}
			sent[r.Seq] = true
			if ends(r) {
				return nil
			}
		}
	}
	if err != nil {
		g.historyFailed(c, s, err)
		return nil
	}
	if follow {
		g.follow(c, s, sub, sent, g.cfg.KeepAlive, rowsUntil{s: s, line: line, ends: ends})
	}
	return nil
}

// rowsUntil is the live part of a request's or an instance's stream: every
// row as it is, until ends says one was the last.
type rowsUntil struct {
	s    *ndjson
	line func(logRow) wire.WatchLine
	ends func(logRow) bool
}

func (u rowsUntil) row(r logRow) bool     { return !u.s.write(u.line(r)) || u.ends(r) }
func (rowsUntil) timer() <-chan time.Time { return nil }
func (rowsUntil) wake() bool              { return false }

// tooSlowLine ends a stream whose watcher fell too far behind.
func (g *Gateway) tooSlowLine() wire.ControlLine {
	return wire.ControlLine{Type: "error", Error: &wire.Error{Code: codeTooSlow,
		Message: "this watcher fell " + strconv.Itoa(g.cfg.WatchBuffer) + " events behind and was disconnected; reconnect with ?after= the last seq you saw"}}
}

// shuttingDownLine ends every stream when the gateway stops.
var shuttingDownLine = wire.ControlLine{Type: "error", Error: &wire.Error{Code: codeUnavailable, Message: "the gateway is shutting down; reconnect"}}
