package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/drovehq/drove/cmd/drove/termview"
	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor/sim"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/projector"
	"github.com/drovehq/drove/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// env is the whole system in this process over the test helpers' broker
// and database, with the demo cluster, reached through its HTTP API.
type env struct {
	sys  *allinone.System
	api  *client.Client
	kcfg kafka.Config
	t    *testing.T
	db   string // the views' database URL
}

func start(t *testing.T) *env { return startWith(t, nil, "") }

// startWith is start with tune applied to the system's configuration
// (nil: none) and the API client speaking with token ("": none).
func startWith(t *testing.T, tune func(*allinone.Config), token string) *env {
	t.Helper()
	ctx := context.Background()
	k := testenv.Kafka(t)
	pg := testenv.Postgres(t)
	simcfg := allinone.DemoSim()
	simcfg.Clock = sim.FastClock(10) // the demo's moves, ten times faster
	level := slog.LevelWarn
	if os.Getenv("DROVE_E2E_DEBUG") != "" {
		level = slog.LevelDebug
	}
	cfg := allinone.Config{
		Kafka:       k.Config(),
		DatabaseURL: pg.URL,
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
		Seed:        allinone.DemoCluster,
		Sim:         simcfg,
	}
	if tune != nil {
		tune(&cfg)
	}
	sys, err := allinone.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sys.Handler)
	t.Cleanup(func() {
		srv.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sys.Stop(sctx); err != nil {
			t.Errorf("stopping the system: %v", err)
		}
	})
	api := client.New(srv.URL, "e2e")
	api.Token = token
	e := &env{sys: sys, api: api, kcfg: k.Config(), t: t, db: pg.URL}
	seeded := len(cfg.Seed().Instances)
	e.waitFor("the inventory in the views", 60*time.Second, func() bool {
		var list struct {
			Items []instance `json:"items"`
		}
		return e.api.Get(ctx, "/v1/instances?limit=1000", &list) == nil && len(list.Items) == seeded
	})
	return e
}

// waitFor polls cond until it holds or the deadline passes.
func (e *env) waitFor(what string, d time.Duration, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for backoff := 10 * time.Millisecond; !cond(); backoff = min(backoff*2, 250*time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(backoff)
	}
}

type instance struct {
	Name      string `json:"name"`
	Storage   string `json:"storage"`
	Primary   string `json:"primary"`
	Secondary string `json:"secondary"`
	Group     string `json:"group"`
}

type job struct {
	Index    int             `json:"index"`
	Instance string          `json:"instance"`
	State    string          `json:"state"`
	Depends  json.RawMessage `json:"depends"`
	Opcodes  []struct {
		From string `json:"from"`
	} `json:"opcodes"`
	ReleasedAt   *time.Time `json:"released_at"`
	EndedAt      *time.Time `json:"ended_at"`
	CancelReason string     `json:"cancel_reason"`
	Error        string     `json:"error"`
}

type dependency struct {
	Job      int      `json:"job"`
	Statuses []string `json:"statuses"`
}

func (e *env) instances(node string) []instance {
	e.t.Helper()
	var all struct {
		Items []instance `json:"items"`
	}
	if err := e.api.Get(context.Background(), "/v1/instances?limit=1000", &all); err != nil {
		e.t.Fatal(err)
	}
	if node == "" {
		return all.Items
	}
	var out []instance
	for _, in := range all.Items {
		if in.Primary == node || in.Secondary == node {
			out = append(out, in)
		}
	}
	return out
}

func (e *env) instance(name string) instance {
	e.t.Helper()
	var in instance
	if err := e.api.Get(context.Background(), "/v1/instances/"+name, &in); err != nil {
		e.t.Fatal(err)
	}
	return in
}

func (e *env) jobs(request string) []job {
	e.t.Helper()
	var list struct {
		Items []job `json:"items"`
	}
	if err := e.api.Get(context.Background(), "/v1/requests/"+request+"/jobs?limit=1000", &list); err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

// tryJobs is jobs for polling: nothing yet while the views have not seen
// the request.
func (e *env) tryJobs(request string) []job {
	var list struct {
		Items []job `json:"items"`
	}
	if err := e.api.Get(context.Background(), "/v1/requests/"+request+"/jobs?limit=1000", &list); err != nil {
		return nil
	}
	return list.Items
}

func (e *env) plan(request string) *wire.Plan {
	e.t.Helper()
	p, err := e.api.Plan(context.Background(), request)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// finish watches a request through the API until it finishes and returns
// what the watch stream said.
func (e *env) finish(request string, within time.Duration) *termview.Progress {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	p := &termview.Progress{Request: request}
	err := e.api.Watch(ctx, "/v1/requests/"+request+"/watch", func(ev client.Event) bool {
		p.Apply(ev)
		return !p.Finished
	})
	if !p.Finished {
		e.t.Fatalf("request %s did not finish within %s (%v)", request, within, err)
	}
	return p
}

// countEvents counts the events of a type in the log.
func (e *env) countEvents(topic, typ string) int {
	e.t.Helper()
	recs, err := kafka.ReadAll(context.Background(), e.kcfg, topic)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Event.Type == typ {
			n++
		}
	}
	return n
}

// replayEqual rebuilds every view from offset zero and fails the test if
// any differs from the live one.
func (e *env) replayEqual() projector.Report {
	e.t.Helper()
	rep, err := projector.Replay(context.Background(), projector.Config{Kafka: e.kcfg, ReplayWait: time.Minute}, e.sys.Pool)
	if err != nil {
		e.t.Fatal(err)
	}
	if !rep.Equal {
		for _, tr := range rep.Tables {
			if !tr.Equal {
				e.t.Errorf("table %s: live %d rows, replay %d rows", tr.Name, tr.LiveRows, tr.ReplayRows)
			}
		}
		e.t.Fatalf("the views differ from their replay from offset zero")
	}
	return rep
}

func deps(t *testing.T, j job) []dependency {
	t.Helper()
	var ds []dependency
	if len(j.Depends) > 0 {
		if err := json.Unmarshal(j.Depends, &ds); err != nil {
			t.Fatalf("job %d depends %s: %v", j.Index, j.Depends, err)
		}
	}
	return ds
}

func names(ins []instance) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.Name)
	}
	slices.Sort(out)
	return out
}

var _ = fmt.Sprint
var _ = events.TopicRequests
