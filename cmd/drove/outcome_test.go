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
