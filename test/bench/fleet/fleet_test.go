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

// How far the planner is behind is summed over the topics it reports a
// read position for, against the log's ends; a planner that reports none
// yet is not caught up.
func TestPlannerBehind(t *testing.T) {
	body := "# HELP drove_planner_read_position x\n" +
		"drove_planner_consumer_lag{topic=\"drove.progress\"} 0\n" +
		"drove_planner_read_position{topic=\"drove.inventory\"} 120\n" +
		"drove_planner_read_position{topic=\"drove.progress\"} 88\n" +
		"drove_planner_requests_total{outcome=\"completed\"} 3\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	want := map[string]float64{"drove.inventory": 110, "drove.progress": 100, "drove.audit": 7}
	if behind, seen := plannerBehind(srv.URL, want); !seen || behind != 12 {
		t.Errorf("behind %v seen %v, want 12 true", behind, seen)
	}
	body = "drove_planner_consumer_lag{topic=\"drove.progress\"} 0\n"
	if _, seen := plannerBehind(srv.URL, want); seen {
		t.Error("a planner reporting no position counted as caught up")
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
