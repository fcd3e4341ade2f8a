package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway"
	"github.com/drovehq/drove/gateway/wire"
)

// stream is an open watch stream.
type stream struct {
	t     *testing.T
	body  io.ReadCloser
	lines chan string // closed at the end of the stream
}

func (e *env) watch(path string) *stream {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, http.MethodGet, e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("watch %s: %d %s %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	s := &stream{t: e.t, body: resp.Body, lines: make(chan string, 1000)}
	e.t.Cleanup(func() { resp.Body.Close() })
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	return s
}

// next returns the next line, or "" at the end of the stream.
func (s *stream) next() string {
	s.t.Helper()
	select {
	case l := <-s.lines:
		return l
	case <-time.After(10 * time.Second):
		s.t.Fatal("no watch line within 10s")
		return ""
	}
}

// event returns the next line that is not a keepalive, decoded.
func (s *stream) event() wire.WatchLine {
	s.t.Helper()
	for {
		l := s.next()
		if l == "" {
			s.t.Fatal("the stream ended")
		}
		if l == `{"type":"keepalive"}` {
			continue
		}
		var w wire.WatchLine
		if err := json.Unmarshal([]byte(l), &w); err != nil {
			s.t.Fatalf("line %q: %v", l, err)
		}
		return w
	}
}

// rest reads to the end of the stream.
func (s *stream) rest() []string {
	s.t.Helper()
	var out []string
	for {
		l := s.next()
		if l == "" {
			return out
		}
		out = append(out, l)
	}
}

func TestWatchFinishedRequestGivesEveryWatcherTheHistory(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.seedRequests()
	e.logEvent("move.progress", "r3", "i1", map[string]any{"request": "r3"}) // another request's

	var wg sync.WaitGroup
	got := make([][]string, 2)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = e.watch("/v1/requests/r1/watch").rest() // ends by itself
		}()
	}
	wg.Wait()
	if len(got[0]) != 5 || strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
		t.Fatalf("watchers got\n%s\nand\n%s", strings.Join(got[0], "\n"), strings.Join(got[1], "\n"))
	}
	var first, last wire.WatchLine
	_ = json.Unmarshal([]byte(got[0][0]), &first)
	_ = json.Unmarshal([]byte(got[0][4]), &last)
	if first.Type != "evacuation.requested" || first.Request != "r1" || last.Type != "request.finished" ||
		first.Seq >= last.Seq || !strings.Contains(string(first.Payload), `"request":"r1"`) || first.Time.IsZero() {
		t.Fatalf("first %+v last %+v", first, last)
	}
}

func TestWatchLive(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.KeepAlive = 50 * time.Millisecond })
	e.seed()
	e.exec(`INSERT INTO requests (id, kind, nodes, mode, requested_at, planned_at) VALUES ('r9', 'evacuation', '{node-a1}', 'all', now(), now())`)
	e.logEvent("evacuation.requested", "r9", "", map[string]any{"request": "r9"})

	req := e.watch("/v1/requests/r9/watch")
	inst := e.watch("/v1/instances/i1/watch")
	history := e.watch("/v1/requests/r9/watch?follow=false")
	if w := req.event(); w.Type != "evacuation.requested" {
		t.Fatalf("history %+v", w)
	}
	if rest := history.rest(); len(rest) != 1 {
		t.Fatalf("follow=false: %d more lines after the history: %v", len(rest), rest)
	}
	// Connected and past the history: what is logged now arrives live.
	e.logEvent("move.progress", "r-other", "i2", map[string]any{"n": 0}) // for neither watcher
	e.logEvent("move.progress", "r9", "i1", map[string]any{"n": 1})
	e.logEvent("move.progress", "r9", "i1", map[string]any{"n": 2})
	for n := 1; n <= 2; n++ {
		for _, s := range []*stream{req, inst} {
			w := s.event()
			if w.Type != "move.progress" || w.Instance != "i1" || w.Request != "r9" || !strings.Contains(string(w.Payload), `"n":`) {
				t.Fatalf("live line %d: %+v", n, w)
			}
		}
	}
	// Quiet streams get keepalives.
	waitFor(t, "a keepalive", 5*time.Second, func() bool { return req.next() == `{"type":"keepalive"}` })
	e.logEvent("request.finished", "r9", "", map[string]any{"request": "r9"})
	if w := req.event(); w.Type != "request.finished" {
		t.Fatalf("last line %+v", w)
	}
	for _, l := range req.rest() {
		if l != `{"type":"keepalive"}` {
			t.Fatalf("a line after request.finished: %s", l)
		}
	}
}

func TestTailerCutsSlowWatcherAndFindsLateRows(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx
	slow := must2(gateway.Subscribe(ctx, e.g, 2))
	fast := must2(gateway.Subscribe(ctx, e.g, 100))
	defer slow.Close()
	defer fast.Close()

	// Seqs 101 and 103 commit before 102, and the tailer delivers 103
	// before 102 exists: it must not lose 102 when it comes.
	insert := func(seq int) {
		e.exec(`INSERT INTO event_log (id, seq, topic, partition, "offset", type, version, time, key, payload)
  VALUES ($1, $2, 't', 0, $2, 'x', 1, now(), 'k', '{}')`, fmt.Sprintf("ev-%d", seq), seq)
	}
	var seqs []int64
	receive := func(n int) {
		for len(seqs) < n {
			select {
			case r := <-fast.Rows:
				seqs = append(seqs, r.Seq)
			case <-time.After(10 * time.Second):
				t.Fatalf("fast watcher got %v, want %d rows", seqs, n)
			}
		}
	}
	insert(101)
	insert(103)
	receive(2)
	insert(102)
	insert(104)
	receive(4)
	if fmtSeqs(seqs) != "[101,103,102,104]" {
		t.Fatalf("fast watcher got %v", seqs)
	}
	select {
	case <-slow.Cut:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow watcher was not cut off")
	}
}

func fmtSeqs(xs []int64) string {
	b, _ := json.Marshal(xs)
	return string(b)
}

func must2[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestHealthzAndMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	var kafkaDown error
	var mu sync.Mutex
	var e *env
	e = newEnv(t, func(c *gateway.Config) {
		c.Metrics = reg
		c.KafkaCheck = func(ctx context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			if kafkaDown != nil {
				return kafkaDown
			}
			return kafka.Ping(ctx, e.kafka)
		}
	})
	if status, body := e.do(http.MethodGet, "/healthz", ""); status != http.StatusOK || !strings.Contains(string(body), `"status":"ok"`) {
		t.Fatalf("healthz %d %s", status, body)
	}
	mu.Lock()
	kafkaDown = errors.New("unable to dial broker kafka-secret-host:9093 as user alice:hunter2")
	mu.Unlock()
	status, body := e.do(http.MethodGet, "/healthz", "")
	if status != http.StatusServiceUnavailable || !strings.Contains(string(body), `"kafka":"unavailable`) {
		t.Fatalf("healthz with Kafka down %d %s; want 503 naming kafka", status, body)
	}
	for _, secret := range []string{"kafka-secret-host", "hunter2", "alice"} {
		if strings.Contains(string(body), secret) {
			t.Fatalf("healthz shows the error's internals (%q): %s", secret, body)
		}
	}
	e.do(http.MethodGet, "/v1/nodes/nope", "")
	status, body = e.do(http.MethodGet, "/metrics", "")
	for _, want := range []string{
		`drove_gateway_http_requests_total{method="GET",route="/v1/nodes/:name",status="404"} 1`,
		`drove_gateway_http_requests_total{method="GET",route="/healthz",status="503"} 1`,
		`drove_gateway_watch_streams_open 0`,
	} {
		if status != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestRunShutsDownWithOpenWatchers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	e := newEnv(t, func(c *gateway.Config) { c.Addr = addr })
	e.exec(`INSERT INTO requests (id, kind, requested_at) VALUES ('r1', 'evacuation', now())`)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- e.g.Run(ctx) }()
	var resp *http.Response
	waitFor(t, "the gateway to listen", 5*time.Second, func() bool {
		resp, err = http.Get("http://" + addr + "/v1/requests/r1/watch")
		return err == nil
	})
	defer resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), "shutting down") {
		t.Fatalf("the watcher's last words: %s", b)
	}
}

// A history longer than a page goes out whole and in order, read a page
// at a time; ?after= resumes it after a seq.
func TestWatchHistoryIsPagedAndResumes(t *testing.T) {
	e := newEnv(t)
	e.seed()
	const n = 1234 // more than two pages
	var seqs []int64
	for i := range n {
		seqs = append(seqs, e.logEvent("move.progress", "r-long", "i1", map[string]any{"n": i}))
	}
	check := func(path string, want []int64) {
		t.Helper()
		lines := e.watch(path).rest()
		if len(lines) != len(want) {
			t.Fatalf("%s: %d lines, want %d", path, len(lines), len(want))
		}
		for i, l := range lines {
			var w wire.WatchLine
			if err := json.Unmarshal([]byte(l), &w); err != nil || w.Seq != want[i] {
				t.Fatalf("%s: line %d has seq %d (%v), want %d", path, i, w.Seq, err, want[i])
			}
		}
	}
	check("/v1/instances/i1/watch?follow=false", seqs)
	check(fmt.Sprintf("/v1/instances/i1/watch?follow=false&after=%d", seqs[999]), seqs[1000:])
	if status, body := e.do(http.MethodGet, "/v1/instances/i1/watch?after=-3", ""); status != http.StatusBadRequest {
		t.Fatalf("after=-3: %d %s", status, body)
	}
}

// Past MaxWatchers a stream is refused with a clear 503; a slot comes back
// when a watcher leaves.
func TestWatchersAreBounded(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.MaxWatchers = 2 })
	e.seed()
	first := e.watch("/v1/instances/i1/watch")
	e.watch("/v1/instances/i2/watch")
	status, body := e.do(http.MethodGet, "/v1/instances/i3/watch", "")
	if status != http.StatusServiceUnavailable || decodeError(t, body).Error.Code != "too_many_watchers" {
		t.Fatalf("a third watcher with a limit of 2: %d %s", status, body)
	}
	first.body.Close()
	waitFor(t, "the slot of the watcher that left", 10*time.Second, func() bool {
		status, _ := e.do(http.MethodGet, "/v1/instances/i3/watch?follow=false", "")
		return status == http.StatusOK
	})
}

// TestWatchRequestJobRows: with ?rows=jobs a request's event lines carry
// the job rows they changed, folded by gateway/progress, in the history
// and live; without it the stream is the events alone; another value is
// a 400.
func TestWatchRequestJobRows(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.KeepAlive = 50 * time.Millisecond })
	e.seed()
	e.exec(`INSERT INTO requests (id, kind, nodes, mode, requested_at, planned_at) VALUES ('r7', 'evacuation', '{node-a1}', 'all', now(), now())`)
	op := events.Opcode{OpID: events.OpInstanceMigrate, Instance: "i1", TargetNode: "node-a2"}
	e.logEvent(events.TypePlanComputed, "r7", "", events.PlanComputed{Request: "r7",
		Jobs: []events.Job{{Index: 0, Opcodes: []events.Opcode{op}}, {Index: 1, Opcodes: []events.Opcode{{OpID: events.OpInstanceMigrate, Instance: "i2"}}}}})
	e.logEvent(events.TypeOpcodeDispatched, "r7", "i1", events.OpcodeDispatched{Request: "r7", Job: 0, Index: 0, Node: "node-a1", Opcode: op})

	status, body := e.do(http.MethodGet, "/v1/requests/r7/watch?follow=false&rows=jobs", "")
	var hist []wire.WatchLine
	for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		var w wire.WatchLine
		if err := json.Unmarshal([]byte(l), &w); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		hist = append(hist, w)
	}
	if status != http.StatusOK || len(hist) != 2 || len(hist[0].Jobs) != 2 || len(hist[1].Jobs) != 1 {
		t.Fatalf("history with rows: %d %s", status, body)
	}
	if r := hist[1].Jobs[0]; r.Index != 0 || r.State != "running" || r.Op != 1 || r.OpName != "migrate → node-a2" || r.Instance != "i1" {
		t.Fatalf("row after the dispatch: %+v", r)
	}
	_, body = e.do(http.MethodGet, "/v1/requests/r7/watch?follow=false", "")
	for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		var w map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &w); err != nil || w["jobs"] != nil {
			t.Fatalf("a line without ?rows=jobs: %s (%v)", l, err)
		}
	}
	if status, body := e.do(http.MethodGet, "/v1/requests/r7/watch?rows=all", ""); status != http.StatusBadRequest || !strings.Contains(string(body), "rows") {
		t.Fatalf("rows=all: %d %s", status, body)
	}

	live := e.watch("/v1/requests/r7/watch?rows=jobs")
	for range 2 {
		live.event() // the history
	}
	e.logEvent(events.TypeProgress, "r7", "i1", events.Progress{Request: "r7", Job: 0, Index: 0, Current: 30, Total: 120, BytesPerSecond: 10})
	w := live.event()
	if len(w.Jobs) != 1 {
		t.Fatalf("live line %+v", w)
	}
	if r := w.Jobs[0]; r.Percent != 25 || r.BytesDone != 30 || r.BytesTotal != 120 || r.RemainingSeconds != 9 {
		t.Fatalf("row after the progress: %+v", r)
	}
	e.logEvent(events.TypeRequestFinished, "r7", "", events.RequestFinished{Request: "r7",
		Moved: []events.Moved{{Instance: "i1", Group: "g", Nodes: []string{"node-a2"}}}, Failed: []events.Failed{{Instance: "i2", Reason: "no room"}}})
	w = live.event()
	if w.Type != events.TypeRequestFinished || len(w.Jobs) != 2 || w.Jobs[0].State != "success" || w.Jobs[1].State != "error" || w.Jobs[1].Message != "no room" {
		t.Fatalf("the last line: %+v", w)
	}
}
