package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestQuickIsSmallAndValid(t *testing.T) {
	cfg, err := parseFlags([]string{"-quick"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.nodes != 2000 || cfg.executors != 4 || cfg.logEvents != 200_000 || cfg.evacuate != 4 {
		t.Errorf("quick: %+v", cfg)
	}
	if _, err := parseFlags([]string{"-nodes", "750"}, io.Discard); err == nil {
		t.Error("750 nodes in groups of 500 accepted")
	}
}

// The planner's lag is summed over its topics, and a planner that reports
// none yet is not caught up.
func TestPlannerLag(t *testing.T) {
	body := "# HELP drove_planner_consumer_lag x\n" +
		"drove_planner_consumer_lag{topic=\"drove.inventory\"} 0\n" +
		"drove_planner_consumer_lag{topic=\"drove.progress\"} 12\n" +
		"drove_planner_requests_total{outcome=\"completed\"} 3\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	if lag, seen := plannerLag(srv.URL); !seen || lag != 12 {
		t.Errorf("lag %v seen %v, want 12 true", lag, seen)
	}
	body = "drove_planner_requests_total{outcome=\"completed\"} 3\n"
	if _, seen := plannerLag(srv.URL); seen {
		t.Error("a planner reporting no lag counted as caught up")
	}
}

// Flags given with -quick win over its sizes.
func TestQuickKeepsGivenFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-quick", "-executors", "300", "-evacuate", "20"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.nodes != 2000 || cfg.executors != 300 || cfg.evacuate != 20 {
		t.Errorf("quick with flags: %+v", cfg)
	}
}
