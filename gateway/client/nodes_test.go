package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drovehq/drove/gateway/wire"
)

// TestAwaitNodeActionWaitsForTheNodesView: the views show the undrain's
// answer before the node's new state (they come on different topics), and
// AwaitNodeAction returns only once the node reads undrained.
func TestAwaitNodeActionWaitsForTheNodesView(t *testing.T) {
	var nodeReads atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/node-actions/na-1", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(wire.NodeAction{Request: "na-1", Node: "n1", Action: "undrain", State: "done", Answer: "undrained"})
	})
	mux.HandleFunc("GET /v1/nodes/n1", func(w http.ResponseWriter, _ *http.Request) {
		// The third read is the first after the projector folded it.
		json.NewEncoder(w).Encode(map[string]any{"name": "n1", "drained": nodeReads.Add(1) < 3})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := New(srv.URL, "test").AwaitNodeAction(ctx, "na-1")
	if err != nil || a.State != "done" {
		t.Fatalf("AwaitNodeAction = %+v, %v; want done", a, err)
	}
	if n := nodeReads.Load(); n != 3 {
		t.Fatalf("returned after %d reads of the node; want 3 (the first showing it undrained)", n)
	}
}
