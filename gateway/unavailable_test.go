package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/gateway"
	"github.com/drovehq/drove/test/testenv"
)

// When Postgres cannot be reached (restarting, down), every call that
// reads the views answers 503 with Retry-After and a message saying so,
// not a 500, and appends nothing.
func TestStoreUnreachableIs503(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	k, kcfg := testenv.Events(t, ctx)
	e := &env{t: t, ctx: ctx, kafka: kcfg}
	// A port nothing listens on: the pool's connections are refused, as
	// while Postgres restarts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	pool, err := pgxpool.New(e.ctx, fmt.Sprintf("postgres://drove@%s/drove?connect_timeout=2", addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	g, err := gateway.New(gateway.Config{Schema: testSchema,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))},
		pool, k.Producer(t, kcfg, "gateway-test"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	down := &env{t: t, ctx: ctx, kafka: kcfg, g: g, srv: srv}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/nodes", ""},
		{http.MethodGet, "/v1/nodes/node-a1", ""},
		{http.MethodGet, "/v1/requests/r1", ""},
		{http.MethodPost, "/v1/evacuations", `{"nodes":["node-a1"],"mode":"all"}`},
		{http.MethodPost, "/v1/nodes/node-a1/undrain", `{}`},
	} {
		req, _ := http.NewRequestWithContext(e.ctx, c.method, srv.URL+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s with Postgres down: %d, Retry-After %q; want 503 with Retry-After",
				c.method, c.path, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	status, body := down.do(http.MethodGet, "/v1/nodes", "")
	if eb := decodeError(t, body); status != http.StatusServiceUnavailable || eb.Error.Code != "unavailable" ||
		!strings.Contains(eb.Error.Message, "Postgres") || strings.Contains(eb.Error.Message, addr) {
		t.Errorf("answer %d %s; want code unavailable naming Postgres, without the address", status, body)
	}
	if recs := e.appended(); len(recs) != 0 {
		t.Errorf("%d events appended while Postgres was down", len(recs))
	}
}
