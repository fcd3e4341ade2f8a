package gateway

import (
	"context"
	"time"
)

// The tests live in package gateway_test (testenv imports packages that
// import this one); this alias gives them the tailer's rows.
type LogRow = logRow

const (
	CodeBadRequest = codeBadRequest
	CodeNotFound   = codeNotFound
	CodeConflict   = codeConflict
	CodeActive     = codeActive
)

// Subscription is a tailer subscription as tests see it.
type Subscription struct {
	Rows  <-chan logRow
	Cut   <-chan struct{}
	Close func()
}

// Subscribe registers a watcher of every row with the gateway's tailer.
func Subscribe(ctx context.Context, g *Gateway, buffer int) (Subscription, error) {
	s, err := g.tail.subscribe(ctx, func(logRow) bool { return true }, buffer)
	if err != nil {
		return Subscription{}, err
	}
	return Subscription{Rows: s.ch, Cut: s.cut, Close: s.close}, nil
}

// SetRefusalClock gives the refusal audit budget a clock the test moves.
func SetRefusalClock(g *Gateway, now func() time.Time) { g.refusals.now = now }

// Routes lists the registered routes, for the OpenAPI coverage test.
func (g *Gateway) Routes() [][2]string {
	var out [][2]string
	for _, r := range g.engine.Routes() {
		out = append(out, [2]string{r.Method, r.Path})
	}
	return out
}
