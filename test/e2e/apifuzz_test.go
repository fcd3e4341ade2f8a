package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// The API fuzzed by a third party (issue 31): schemathesis generates
// requests from the served OpenAPI document and sends them to the whole
// system (gateway, planner, projector, executors on the sim driver) with
// tokens on, as the operator. Every operation of the document is fuzzed;
// every answer must be no 5xx and conform to the document (status,
// headers, content type, body schema).
//
// It runs twice: first only invalid requests (schemathesis's negative
// mode, less what the hooks in testdata/schemathesis_hooks.py drop as not
// invalid to the gateway: the positive cases that mode mixes in, unknown
// query parameters and a body's Content-Type label, which the gateway
// ignores), each of which must be refused, and the log must not have
// grown by one record, nor the gateway have appended one; then valid and
// invalid requests mixed, which change the system as an operator would.
// Deterministic (a fixed seed, no example database), so a failure
// replays.

// fuzzChecks are schemathesis's checks of every answer.
const fuzzChecks = "not_a_server_error,status_code_conformance,content_type_conformance," +
	"response_headers_conformance,response_schema_conformance"

func TestAPIFuzzedBySchemathesis(t *testing.T) {
	bin := schemathesisBin(t)
	e := startWithTokens(t, permTokens, tokOperator)
	ctx := context.Background()

	// The topics only a request can grow: heartbeats and checkpoints
	// grow by themselves, the rest only when something was asked.
	topics := []string{events.TopicRequests, events.TopicInventory, events.TopicPlans, events.TopicJobs,
		events.TopicOpcodes, events.TopicProgress, events.TopicAudit, events.TopicMigrations, events.TopicSettings}
	before, err := kafka.Ends(ctx, e.kcfg, topics...)
	if err != nil {
		t.Fatal(err)
	}
	m0 := e.gatewayCounts()
	e.schemathesis(bin, "negative", 15, fuzzChecks+",negative_data_rejection", "DROVE_FUZZ_INVALID_ONLY=1")
	m1 := e.gatewayCounts()
	after, err := kafka.Ends(ctx, e.kcfg, topics...)
	if err != nil {
		t.Fatal(err)
	}
	for tp, end := range after {
		if end != before[tp] {
			t.Errorf("%s grew from %d to %d while only invalid requests were sent", tp, before[tp], end)
		}
	}
	if n := m1.appended - m0.appended; n != 0 {
		t.Errorf("the gateway appended %d events while only invalid requests were sent", n)
	}
	if n := m1.accepted - m0.accepted; n != 0 {
		t.Errorf("%d invalid requests were answered 2xx", n)
	}

	e.schemathesis(bin, "all", 12, fuzzChecks)
	m2 := e.gatewayCounts()
	if m2.server != 0 {
		t.Errorf("the gateway answered %d requests with a 5xx", m2.server)
	}
	t.Logf("schemathesis sent %d requests (%d invalid only, %d mixed); the gateway appended %d events",
		m2.requests, m1.requests-m0.requests, m2.requests-m1.requests, m2.appended)
	if m2.requests < 2000 {
		t.Errorf("the gateway answered %d requests, want at least 2,000", m2.requests)
	}
}

// schemathesisBin is the schemathesis that test/tools/deps.sh installs,
// or $DROVE_SCHEMATHESIS.
func schemathesisBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("DROVE_SCHEMATHESIS")
	if bin == "" {
		bin = filepath.Join("..", "..", ".cache", "schemathesis", "bin", "schemathesis")
	}
	abs, err := filepath.Abs(bin)
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		t.Fatalf("schemathesis is not installed (make test-deps, or set DROVE_SCHEMATHESIS): %v", err)
	}
	return abs
}

// schemathesis runs one pass over every operation of the served document
// and fails the test with its report if any check failed.
func (e *env) schemathesis(bin, mode string, perOperation int, checks string, env ...string) {
	e.t.Helper()
	hooks, err := filepath.Abs(filepath.Join("testdata", "schemathesis_hooks.py"))
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // beside CPU load, a pass took over 2
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", e.api.Base+"/v1/openapi.json",
		"--url", e.api.Base,
		"-H", "Authorization: Bearer "+tokOperator,
		"--mode", mode, "--phases", "examples,coverage,fuzzing",
		"--checks", checks,
		"--max-examples", fmt.Sprint(perOperation),
		"--seed", "31", "--generation-database", "none",
		// One worker: schemathesis spends its time generating, not
		// waiting, and Python 3.11 raised "AST constructor recursion
		// depth mismatch" once from two workers' threads.
		"--workers", "1", "--request-timeout", "20",
		"--suppress-health-check", "all",
		"--no-color", "--output-truncate", "false")
	// The report goes nowhere: the test's own temporary folder.
	cmd.Dir = e.t.TempDir()
	cmd.Env = append(append(os.Environ(), "SCHEMATHESIS_HOOKS="+hooks), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("schemathesis (%s): %v\n%s", mode, err, out)
	}
	if testing.Verbose() {
		e.t.Logf("schemathesis (%s):\n%s", mode, tail(string(out), 40))
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// gatewayCounts are the gateway's own counters: requests answered, those
// answered 2xx and 5xx, and the events it appended.
type gatewayCounts struct{ requests, accepted, server, appended int }

func (e *env) gatewayCounts() gatewayCounts {
	e.t.Helper()
	mfs, err := e.sys.Registry.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	var c gatewayCounts
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			n := int(m.GetCounter().GetValue())
			switch mf.GetName() {
			case "drove_gateway_events_appended_total":
				c.appended += n
			case "drove_gateway_http_requests_total":
				c.requests += n
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				// schemathesis reads the document itself: not a request
				// of its tests.
				if strings.HasPrefix(labels["status"], "2") && labels["route"] != "/v1/openapi.json" {
					c.accepted += n
				}
				if strings.HasPrefix(labels["status"], "5") {
					c.server += n
				}
			}
		}
	}
	return c
}
