package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway"
	"github.com/drovehq/drove/projector"
	"github.com/drovehq/drove/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testSchema is not the default on purpose: it proves every query names
// its schema instead of relying on the pool's search_path.
const testSchema = "views"

// tailInterval is short so that live watch tests are quick.
const tailInterval = 20 * time.Millisecond

// env is one test's gateway over a fresh database and Kafka cluster.
type env struct {
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	kafka kafka.Config
	g     *gateway.Gateway
	srv   *httptest.Server
	cfg   gateway.Config  // g's, for a second gateway over another pool
	prod  *kafka.Producer // g's

	offset atomic.Int64 // for event_log rows the tests insert
}

func newEnv(t *testing.T, tune ...func(*gateway.Config)) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	pool := testenv.Postgres(t).Pool(ctx)
	if err := projector.ApplySchema(ctx, pool, testSchema); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	k, kcfg := testenv.Events(t, ctx)
	producer := k.Producer(t, kcfg, "gateway-test")
	cfg := gateway.Config{
		Schema:       testSchema,
		DryRunWait:   5 * time.Second,
		Logger:       slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		TailInterval: tailInterval,
	}
	for _, f := range tune {
		f(&cfg)
	}
	g, err := gateway.New(cfg, pool, producer)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	return &env{t: t, ctx: ctx, pool: pool, kafka: kcfg, g: g, srv: srv, cfg: cfg, prod: producer}
}

// exec runs SQL in the test schema.
func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	err := pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(e.ctx, `SELECT set_config('search_path', $1, true)`, testSchema); err != nil {
			return err
		}
		_, err := tx.Exec(e.ctx, sql, args...)
		return err
	})
	if err != nil {
		e.t.Fatalf("exec %q: %v", firstLine(sql), err)
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i > 0 {
		return s[:i]
	}
	return s
}

// seed declares a small cluster: group g1 (node-a1, node-a2) and g2
// (node-b1, drained), mirrored instances i1 and i2 between the two g1
// nodes, and i3 alone on node-b1.
func (e *env) seed() {
	e.t.Helper()
	e.exec(`
INSERT INTO groups (name, alloc_policy, updated_at) VALUES
  ('g1', 'preferred', now()), ('g2', 'last_resort', now()), ('g3', 'unallocable', now());
INSERT INTO nodes (name, group_name, total_memory_mib, total_disk_mib, total_cpus,
  free_memory_mib, free_disk_mib, offline, drained, vm_capable, updated_at) VALUES
  ('node-a1', 'g1', 65536, 1000000, 32, 32768, 500000, false, false, true, now()),
  ('node-a2', 'g1', 65536, 1000000, 32, 32768, 500000, false, false, true, now()),
  ('node-b1', 'g2', 65536, 1000000, 32, 60000, 900000, false, true, true, now());
INSERT INTO instances (name, owner, memory_mib, vcpus, disk_mib, storage, run_state,
  group_name, primary_node, secondary_node, updated_at) VALUES
  ('i1', 'acct-1', 4096, 2, 10240, 'drbd', 'running', 'g1', 'node-a1', 'node-a2', now()),
  ('i2', 'acct-2', 4096, 2, 10240, 'drbd', 'running', '',   'node-a2', 'node-a1', now()),
  ('i3', 'acct-1', 2048, 1, 5120, 'plain', 'running', 'g2', 'node-b1', '', now());`)
}

// logEvent inserts an event_log row as the projector would, and returns
// its seq.
func (e *env) logEvent(typ, request, instance string, payload any) int64 {
	e.t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		e.t.Fatal(err)
	}
	off := e.offset.Add(1)
	var seq int64
	err = pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
		return tx.QueryRow(e.ctx, `INSERT INTO `+testSchema+`.event_log
  (id, topic, partition, "offset", type, version, time, key, correlation_id, request_id, instance, payload)
  VALUES ($1, 'test', 0, $2, $3, 1, now(), $4, $5, $5, $6, $7) RETURNING seq`,
			events.NewID(), off, typ, request+instance, request, instance, raw).Scan(&seq)
	})
	if err != nil {
		e.t.Fatalf("log %s: %v", typ, err)
	}
	return seq
}

// do sends a request and returns the status and body; the exchange must
// validate against the OpenAPI document (openapi_test.go).
func (e *env) do(method, path, body string, header ...string) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(e.ctx, method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	checkExchange(e.t, req, body, resp.StatusCode, resp.Header, b)
	return resp.StatusCode, b
}

// get decodes a 200 answer of GET path into out.
func (e *env) get(path string, out any) {
	e.t.Helper()
	status, body := e.do(http.MethodGet, path, "")
	if status != http.StatusOK {
		e.t.Fatalf("GET %s = %d %s", path, status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		e.t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

// errorBody is the JSON error answer.
type errorBody struct {
	Error struct {
		Code     string `json:"code"`
		Message  string `json:"message"`
		Field    string `json:"field"`
		Instance string `json:"instance"`
		Request  string `json:"request"`
	} `json:"error"`
}

func decodeError(t *testing.T, body []byte) errorBody {
	t.Helper()
	var eb errorBody
	if err := json.Unmarshal(body, &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
		t.Fatalf("not a JSON error: %s (%v)", body, err)
	}
	return eb
}

// appended reads every committed event of the requests topic.
func (e *env) appended() []kafka.Record {
	e.t.Helper()
	recs, err := kafka.ReadAll(e.ctx, e.kafka, events.TopicRequests)
	if err != nil && !errors.Is(err, kafka.ErrUnknownTopic) {
		e.t.Fatalf("read %s: %v", events.TopicRequests, err)
	}
	return recs
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// as decodes env's payload as a T or fails the test.
func as[T events.Payload](t *testing.T, env events.Envelope) T {
	t.Helper()
	v, err := events.As[T](env)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
