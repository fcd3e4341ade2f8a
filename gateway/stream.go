package gateway

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
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
			if !s.write(controlLine{Type: "keepalive"}) {
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
