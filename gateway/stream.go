package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/drovehq/drove/gateway/wire"
)

// Every watch stream (a request's, an instance's, a migration's) is the
// same NDJSON stream: headers, the history, then live rows from the shared
// tailer until the stream's own rule ends it. The pieces they share live
// here; each stream says only what it matches, how a row reads, and when
// it ends.

// ndjson writes one watch stream, each line flushed at once.
type ndjson struct {
	w   gin.ResponseWriter
	enc *json.Encoder
}

// startStream writes a watch stream's status and headers (header adds the
// stream's own) and counts the watcher until done is called.
func (g *Gateway) startStream(c *gin.Context, header map[string]string) (s *ndjson, done func()) {
	g.metrics.watches.Inc()
	w := c.Writer
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // proxies must not hold lines back
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(http.StatusOK)
	w.Flush()
	return &ndjson{w: w, enc: json.NewEncoder(w)}, g.metrics.watches.Dec
}

// write sends one line; false means the watcher is gone.
func (s *ndjson) write(v any) bool {
	if err := s.enc.Encode(v); err != nil {
		return false
	}
	s.w.Flush()
	return true
}

// live is a stream's own part of the live loop.
type live interface {
	// row handles a live row not sent before; true ends the stream.
	row(r logRow) (end bool)
	// timer is an extra wake-up the stream wants now, nil for none; it is
	// asked again before every wait.
	timer() <-chan time.Time
	// wake handles the timer firing; true ends the stream.
	wake() (end bool)
}

// follow runs the live part of a stream: rows from sub that were not sent
// with the history go to l, a keepalive line goes out every keepalive,
// and the stream ends with an error line when the watcher fell behind or
// the gateway stops, silently when the client leaves.
func (g *Gateway) follow(c *gin.Context, s *ndjson, sub *subscription, sent map[int64]bool,
	keepalive time.Duration, l live) {
	ka := time.NewTicker(keepalive)
	defer ka.Stop()
	for {
		select {
		case r := <-sub.ch:
			if sent[r.Seq] {
				continue
			}
			sent[r.Seq] = true
			if l.row(r) {
				return
			}
		case <-l.timer():
			if l.wake() {
				return
			}
		case <-sub.cut:
			g.metrics.watchCut.Inc()
			g.log.Warn("watch stream cut: the watcher fell behind", "path", c.Request.URL.Path, "buffer", g.cfg.WatchBuffer)
			s.write(g.tooSlowLine())
			return
		case <-ka.C:
			if !s.write(wire.ControlLine{Type: "keepalive"}) {
				return
			}
		case <-g.closing:
			s.write(shuttingDownLine)
			return
		case <-c.Done():
			return
		}
	}
}

// historyPage is how many rows of a stream's history are read at once: a
// long history goes out page by page and is never held whole.
const historyPage = 500

// history reads a stream's history (query name with args), a page at a
// time, after a seq.
type history struct {
	g     *Gateway
	name  string
	args  []any
	after int64
	done  bool
}

func (g *Gateway) history(name string, after int64, args ...any) *history {
	return &history{g: g, name: name, args: args, after: after}
}

// next is the next page, empty at the end.
func (h *history) next(ctx context.Context) ([]logRow, error) {
	if h.done {
		return nil, nil
	}
	rows, err := many[logRow](ctx, h.g.db, h.name, append(slices.Clone(h.args), h.after, historyPage)...)
	if err != nil {
		return nil, err
	}
	h.done = len(rows) < historyPage
	if len(rows) > 0 {
		h.after = rows[len(rows)-1].Seq
	}
	return rows, nil
}

// all reads every page; for answers that hold the whole history anyway.
func (h *history) all(ctx context.Context) ([]logRow, error) {
	var out []logRow
	for {
		rows, err := h.next(ctx)
		if err != nil || len(rows) == 0 {
			return out, err
		}
		out = append(out, rows...)
	}
}

// afterParam is ?after=SEQ: a stream resumed after the last line a
// watcher saw (every line carries its seq) starts its history there.
func afterParam(c *gin.Context) (int64, error) {
	v := c.Query("after")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("after", "after: "+strconv.Quote(v)+" is not a seq (want a whole number, 0 or more)")
	}
	return n, nil
}

// admitWatcher takes one of Config.MaxWatchers slots for a stream, or
// refuses it: every open stream holds a subscription and a connection.
func (g *Gateway) admitWatcher() (release func(), err error) {
	if g.watchers.Add(1) > int64(g.cfg.MaxWatchers) {
		g.watchers.Add(-1)
		return nil, &wire.Error{Status: http.StatusServiceUnavailable, Code: codeTooMany,
			Message: fmt.Sprintf("%d watch streams are open, this gateway's limit (MaxWatchers); close one or try again later", g.cfg.MaxWatchers)}
	}
	return func() { g.watchers.Add(-1) }, nil
}

// historyFailed ends a stream whose history could not be read after it
// started (its status was already sent).
func (g *Gateway) historyFailed(c *gin.Context, s *ndjson, err error) {
	g.log.Error("watch history", "path", c.Request.URL.Path, "err", err)
	s.write(wire.ControlLine{Type: "error", Error: &wire.Error{Code: codeUnavailable,
		Message: "reading the history failed; reconnect with ?after= the last seq you saw"}})
}
