package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
)

// After a pause, the view can still show the record the pause wrote
// (paused, its phase running) when the watch has seen the pause's end:
// the outcome waits for the record that says the phase ended before it
// prints how to continue.
func TestOutcomeWaitsForThePausesEnd(t *testing.T) {
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/migrations/m1" {
			http.NotFound(w, r)
			return
		}
		m := wire.InstanceMigration{MigrationRecord: wire.MigrationRecord{ID: "m1", State: "paused", Phase: "sync"}, PhaseRunning: true,
			MigrationProgress: wire.MigrationProgress{Message: "pausing: stopping sync 1"}}
		if reads.Add(1) > 2 {
			m.PhaseRunning, m.Message = false, "sync 1 stopped"
		}
		_ = json.NewEncoder(w).Encode(m)
	}))
	defer srv.Close()

	var out strings.Builder
	code := outcome(context.Background(), client.New(srv.URL, "test"), "vm1",
		wire.MigrationLine{Migration: "m1", State: "paused"}, &out)
	if code != exitOK || reads.Load() != 3 || !strings.Contains(out.String(), "Migration is paused") {
		t.Fatalf("outcome = %d after %d reads: %q; want the paused advice after the third read", code, reads.Load(), out.String())
	}
}

// drove migrate --watch ends with the downtime measured and predicted,
// against the budget when there is one; a migration the budget failed
// says both figures too.
func TestOutcomeShowsPredictedAndMeasuredDowntime(t *testing.T) {
	for _, c := range []struct {
		name string
		m    wire.InstanceMigration
		want []string
	}{
		{"switched within its budget", wire.InstanceMigration{MigrationRecord: wire.MigrationRecord{ID: "m1", State: "successful"},
			Switched: true, DowntimeMS: 640, WorkloadDowntimeMS: 655, PredictedDowntimeMS: 700, MaxDowntimeMS: 1000},
			[]string{"Downtime: 655 ms as the workload saw it (its own timeline), 640 ms as measured by Drove.", "Predicted downtime: 700 ms, budget 1000 ms."}},
		{"switched with no budget", wire.InstanceMigration{MigrationRecord: wire.MigrationRecord{ID: "m1", State: "successful"},
			Switched: true, DowntimeMS: 40, PredictedDowntimeMS: 110},
			[]string{"Downtime: 40 ms (measured by Drove", "Predicted downtime: 110 ms (no budget)."}},
		{"failed over budget", wire.InstanceMigration{MigrationRecord: wire.MigrationRecord{ID: "m1", State: "failed"},
			PredictedDowntimeMS: 400, MaxDowntimeMS: 300, MigrationProgress: wire.MigrationProgress{Error: "over the downtime budget"}},
			[]string{"Migration failed: over the downtime budget", "Predicted downtime: 400 ms, budget 300 ms."}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = json.NewEncoder(w).Encode(c.m)
			}))
			defer srv.Close()
			var out strings.Builder
			outcome(context.Background(), client.New(srv.URL, "test"), "vm1", wire.MigrationLine{Migration: "m1"}, &out)
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("outcome %q does not say %q", out.String(), w)
				}
			}
		})
	}
}
