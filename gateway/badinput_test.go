package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway"
)

// Bad input anywhere in the API — random methods, paths, query strings and
// bodies (huge, deeply nested, not UTF-8, wrong types) — is never answered
// with a 5xx, and a 4xx never appends anything to the log. The property
// test draws a few hundred requests from a fixed seed, so a failure is
// the same on every run and names the request.

var (
	badMethods = []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}
	badRoutes  = []string{
		"/healthz", "/v1/evacuations", "/v1/group-changes", "/v1/requests", "/v1/requests/{}",
		"/v1/requests/{}/approve", "/v1/requests/{}/cancel", "/v1/requests/{}/plan", "/v1/requests/{}/jobs",
		"/v1/jobs", "/v1/nodes", "/v1/nodes/{}", "/v1/groups", "/v1/settings", "/v1/instances/{}/user-migration",
		"/v1/instances/{}/max-downtime",
		"/v1/migrations", "/v1/migrations/{}", "/v1/migrations/{}/{}/{}", "/v1/instances", "/v1/instances/{}",
		"/v1/instances/{}/migrate", "/v1/instances/{}/stop", "/v1/instances/{}/start", "/v1/{}", "/{}",
	}
	badSegments = []string{"node-a1", "node-b1", "i1", "i3", "r-1", "0", "-1", "99999999999999999999",
		"%ff%fe", "%00", "..", "%2e%2e", "ñandú", "a%2Fb", strings.Repeat("x", 5000), "{}", "%", "null"}
	badQueryKeys   = []string{"action", "mode", "dry_run", "limit", "offset", "after", "state", "to", "target", "at", "page", "x"}
	badQueryValues = []string{"", "automatic", "begin", "sync", "switch", "abort", "all", "true", "no", "-5", "0",
		"1e400", "%ff", "2026-13-45T99:99:99Z", "node-a2", strings.Repeat("9", 400), "\x00", "[]"}
	badBodies = []string{"", "{}", "null", "[]", "0", `"x"`, "{", `{"nodes":"node-a1"}`, `{"nodes":[1,2]}`,
		`{"nodes":["node-a1"],"mode":7}`, `{"nodes":["node-a1"],"mode":"sideways"}`, `{"instances":{"a":1}}`,
		`{"nodes":["node-zz"]}`, `{"instances":["i1"],"to":"g9"}`, `{"max_running_migrations_per_node":-1}`,
		`{"send_mbps_limit":1e400}`, `{"allow":"yes"}`, `{"nodes":["node-a1"],"nodes":["node-a2"]}`,
		"{\"nodes\":[\"\xff\xfe\"]}", "\xff\xfe\xfd", `{"reason":{"why":[[[[[]]]]]}}`}
)

// badRequest is one drawn request.
type badRequest struct {
	method, path, query string
	body                []byte
}

func (r badRequest) String() string {
	b := r.body
	if len(b) > 80 {
		b = append(b[:80:80], "..."...)
	}
	return fmt.Sprintf("%s %s?%s body %q", r.method, r.path, r.query, b)
}

func drawBadRequest(rng *rand.Rand) badRequest {
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	path := pick(badRoutes)
	for strings.Contains(path, "{}") {
		path = strings.Replace(path, "{}", pick(badSegments), 1)
	}
	var q []string
	for range rng.IntN(4) {
		q = append(q, pick(badQueryKeys)+"="+pick(badQueryValues))
	}
	var body []byte
	switch rng.IntN(20) {
	case 0:
		body = bytes.Repeat([]byte("["), 200_000) // deep
	case 1:
		body = []byte(`{"nodes":["` + strings.Repeat("a", 3<<20) + `"]}`) // huge
	case 2:
		body = make([]byte, 1+rng.IntN(4096)) // random bytes
		for i := range body {
			body[i] = byte(rng.UintN(256))
		}
	default:
		body = []byte(pick(badBodies))
	}
	method := pick(badMethods)
	if rng.IntN(4) > 0 { // mostly the route's own method, to get past routing
		method = routeMethod(path)
	}
	return badRequest{method: method, path: path, query: strings.Join(q, "&"), body: body}
}

// routeMethod is the method the API serves path with.
func routeMethod(path string) string {
	for _, suffix := range []string{"/evacuations", "/group-changes", "/approve", "/cancel", "/migrate", "/stop", "/start"} {
		if strings.HasSuffix(path, suffix) {
			return http.MethodPost
		}
	}
	if strings.HasSuffix(path, "/settings") || strings.HasSuffix(path, "/user-migration") || strings.HasSuffix(path, "/max-downtime") {
		return http.MethodPut
	}
	return http.MethodGet
}

// badInputEnv is a gateway over the seeded cluster, with what it needs to
// tell whether a request appended anything.
type badInputEnv struct {
	*env
}

func newBadInputEnv(t *testing.T) *badInputEnv {
	e := newEnv(t, func(c *gateway.Config) { c.DryRunWait = 50 * time.Millisecond })
	e.seed()
	return &badInputEnv{env: e}
}

// logEnd is the sum of every Drove topic's end offset: it moves with any
// append, transaction markers included.
func (e *badInputEnv) logEnd(t *testing.T) int64 {
	t.Helper()
	ends, err := kafka.Ends(e.ctx, e.kafka, events.Topics()...)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, end := range ends {
		sum += end
	}
	return sum
}

// send makes r and returns its status, or 0 when a stream was still open
// at the deadline (a watch answered 200 and keeps going).
func (e *badInputEnv) send(t *testing.T, r badRequest) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	u := e.srv.URL + r.path
	if r.query != "" {
		u += "?" + r.query
	}
	if _, err := url.Parse(u); err != nil {
		return -1 // no client could send it
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, bytes.NewReader(r.body))
	if err != nil {
		return -1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: no answer: %v", r, err)
	}
	defer resp.Body.Close()
	if strings.Contains(resp.Header.Get("Content-Type"), "ndjson") {
		return resp.StatusCode // a stream: its status is what matters
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s: reading the answer: %v", r, err)
	}
	return resp.StatusCode
}

// check sends r and fails on a 5xx, or on a 4xx that appended.
func (e *badInputEnv) check(t *testing.T, r badRequest) int {
	t.Helper()
	before := e.logEnd(t)
	status := e.send(t, r)
	if status >= 500 {
		t.Fatalf("%s: answered %d", r, status)
	}
	if status >= 400 && status < 500 {
		if after := e.logEnd(t); after != before {
			t.Fatalf("%s: answered %d but appended %d records", r, status, after-before)
		}
	}
	return status
}

func TestBadInputNeverServerErrorNorAppends(t *testing.T) {
	e := newBadInputEnv(t)
	rng := rand.New(rand.NewPCG(1, 2))
	statuses := map[int]int{}
	for range 600 {
		statuses[e.check(t, drawBadRequest(rng))]++
	}
	t.Logf("statuses of 600 random requests (-1: no client could send it): %v", statuses)
}

// A flood of bad tokens is audited within a bound: the burst one record
// each, the rest folded into one count that is written when the budget
// refills, and the counts add up to every refusal.
func TestBadTokenFloodIsAuditedWithinABound(t *testing.T) {
	const flood = 300
	e := newEnv(t, withTokens, func(c *gateway.Config) { c.RefusalAuditBurst = 10 })
	e.seed()
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	gateway.SetRefusalClock(e.g, func() time.Time { return now })
	for range flood {
		if status, _ := e.do(http.MethodGet, "/v1/nodes", "", "Authorization", "Bearer wrong"); status != http.StatusUnauthorized {
			t.Fatalf("a bad token answered %d", status)
		}
	}
	// A second later the bucket has room: the next refusal writes the
	// fold, then itself.
	now = now.Add(time.Second)
	e.do(http.MethodGet, "/v1/nodes", "", "Authorization", "Bearer wrong")
	recs, err := kafka.ReadAll(e.ctx, e.kafka, events.TopicAudit)
	if err != nil {
		t.Fatal(err)
	}
	counted := 0
	for _, r := range recs {
		a := as[events.AuditRecorded](t, r.Event)
		if a.Action != "refusals folded" {
			counted++
			continue
		}
		var n int
		if _, err := fmt.Sscanf(a.Detail, "%d refusals folded", &n); err != nil {
			t.Fatalf("a folded record without its count: %q", a.Detail)
		}
		counted += n
	}
	if len(recs) > 12 {
		t.Fatalf("%d bad tokens wrote %d audit records; the bound is the burst of 10 and one fold", flood+1, len(recs))
	}
	if counted != flood+1 {
		t.Fatalf("the audit records account for %d refusals, want %d", counted, flood+1)
	}
}
