package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/test/testenv"
)

// Postgres restarted under a running system in the middle of an
// evacuation: the projector stops on the lost connection, is restarted
// (the log says so, and /healthz), catches up, and the views equal their
// replay; the request finishes with everything moved.
func TestPostgresRestartMidEvacuation(t *testing.T) {
	t.Parallel()
	pg := testenv.OwnPostgres(t, 0, "")
	e := startWith(t, func(c *allinone.Config) { c.DatabaseURL = pg.URL("postgres") }, "")
	ctx := context.Background()
	node := "node-g3-004"
	a, err := e.api.Evacuate(ctx, wire.Evacuation{Nodes: []string{node}, Mode: "all"})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("a job to end", time.Minute, func() bool {
		for _, j := range e.tryJobs(a.Request) {
			if j.State == "success" {
				return true
			}
		}
		return false
	})
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the projector to notice", time.Minute, func() bool {
		return strings.HasPrefix(e.sys.Parts()["projector"], "restarting")
	})
	testenv.OwnPostgres(t, pg.Port, pg.Dir)

	e.waitFor("the request to finish in the views", 3*time.Minute, func() bool {
		var r struct {
			Status string `json:"status"`
		}
		return e.api.Get(ctx, "/v1/requests/"+a.Request, &r) == nil && r.Status == "finished"
	})
	p := e.finish(a.Request, time.Minute)
	if len(p.Failed) != 0 {
		t.Errorf("not moved across the restart: %+v", p.Failed)
	}
	var h struct {
		Status string `json:"status"`
		Checks struct {
			Postgres string            `json:"postgres"`
			Parts    map[string]string `json:"parts"`
		} `json:"checks"`
	}
	if err := e.api.Get(ctx, "/healthz", &h); err != nil {
		t.Fatalf("/healthz after the restart: %v", err)
	}
	if h.Status != "ok" || !strings.HasPrefix(h.Checks.Parts["projector"], "running (restarted") {
		t.Errorf("/healthz = %+v; want ok, with the projector's restart told", h)
	}
	for part, state := range h.Checks.Parts {
		if strings.Contains(state, "postgres://") || strings.Contains(state, "127.0.0.1") {
			t.Errorf("/healthz shows %s as %q: no connection strings", part, state)
		}
	}
	e.replayEqual()
}
