package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drovehq/drove/gateway/wire"
)

// drove settings --instance sets an instance's own downtime budget (the
// body the gateway reads, the answer printed) and reads it back; 0 says
// it follows the global budget.
func TestSettingsInstanceBudget(t *testing.T) {
	var put wire.InstanceBudget
	budget := int64(0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/v1/instances/z1/max-downtime":
			if err := json.NewDecoder(r.Body).Decode(&put); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			budget = put.MaxDowntimeMS
			w.WriteHeader(http.StatusAccepted)
			_ = json.NewEncoder(w).Encode(wire.InstanceChanged{Instance: "z1", Status: "accepted", MaxDowntimeMS: budget})
		case r.Method == http.MethodGet && r.URL.Path == "/v1/instances/z1":
			_ = json.NewEncoder(w).Encode(wire.Instance{Name: "z1", MaxDowntimeMS: budget})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	code, out, errs := run(t, "", "settings", "--gateway", srv.URL, "--instance", "z1", "--max-downtime", "450", "--reason", "SLA")
	if code != exitOK || out != "Downtime budget of z1: 450 ms.\n" || put.MaxDowntimeMS != 450 || put.Reason != "SLA" {
		t.Fatalf("set: exit %d, %q %q; sent %+v", code, out, errs, put)
	}
	code, out, _ = run(t, "", "settings", "--gateway", srv.URL, "--instance", "z1")
	if code != exitOK || !strings.Contains(out, "max_downtime_ms  450 ms") || !strings.Contains(out, "user_migration   default") {
		t.Fatalf("read: exit %d, %q", code, out)
	}
	code, out, _ = run(t, "", "settings", "--gateway", srv.URL, "--instance", "z1", "--max-downtime", "0")
	if code != exitOK || out != "Downtime budget of z1: 0 (follows the settings' max_downtime_ms).\n" {
		t.Fatalf("clear: exit %d, %q", code, out)
	}
	// A global setting beside --instance is a usage error, sent nowhere.
	code, _, errs = run(t, "", "settings", "--gateway", srv.URL, "--instance", "z1", "--resync-max-syncs", "3")
	if code != exitUsage || !strings.Contains(errs, "--instance takes only") {
		t.Fatalf("mixed: exit %d, %q", code, errs)
	}
}

// drove settings --help explains the instance's budget and the order.
func TestSettingsHelpExplainsTheInstanceBudget(t *testing.T) {
	code, _, errs := run(t, "", "settings", "--help")
	for _, want := range []string{"--instance NAME", "the instance's own downtime budget", "A migration's budget is the one it asks for, else its instance's"} {
		if code != exitOK || !strings.Contains(errs, want) {
			t.Fatalf("help: exit %d, %q; want %q", code, errs, want)
		}
	}
}
