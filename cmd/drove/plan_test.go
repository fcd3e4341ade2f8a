package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// drove evacuate --dry-run prints each move with its predicted downtime,
// and how the longest was reached.
func TestEvacuateDryRunShowsPredictedDowntime(t *testing.T) {
	plan := wire.PlanRow{Request: "r1",
		Moved:  json.RawMessage(`[{"instance":"z1","group":"g1","nodes":["n2"]},{"instance":"i1","group":"g1","nodes":["n3","n1"]}]`),
		Failed: json.RawMessage(`[]`),
		Jobs: json.RawMessage(`[{"index":0,"opcodes":[{"op_id":"OP_INSTANCE_MIGRATE","instance":"z1","from":"n1","to":"n2"}]},
 {"index":1,"opcodes":[{"op_id":"OP_INSTANCE_FAILOVER","instance":"i1","from":"n1","to":"n3"},
   {"op_id":"OP_INSTANCE_REPLACE_DISKS","instance":"i1","from":"n3","to":"n1"}]}]`),
		Moves: []wire.MoveDowntime{
			{Job: 0, Index: 0, Instance: "z1", OpID: string(events.OpInstanceMigrate), From: "n1", To: "n2", PredictedDowntimeMS: 507,
				How: "downtime: 507 ms = 200 ms stop and start + 204 ms final delta"},
			{Job: 1, Index: 0, Instance: "i1", OpID: string(events.OpInstanceFailover), From: "n1", To: "n3", PredictedDowntimeMS: 100},
			{Job: 1, Index: 1, Instance: "i1", OpID: string(events.OpInstanceReplaceDisks), From: "n3", To: "n1"},
		}}
	var asked wire.Evacuation
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/evacuations" || json.NewDecoder(r.Body).Decode(&asked) != nil {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(wire.Accepted{Request: "r1", Status: "awaiting-approval", Plan: &plan})
	}))
	defer srv.Close()
	code, out, errs := run(t, "", "evacuate", "n1", "--dry-run", "--gateway", srv.URL)
	if code != exitOK || !asked.DryRun {
		t.Fatalf("exit %d, %q %q; asked %+v", code, out, errs, asked)
	}
	for _, want := range []string{
		"job 0   z1                   migrate → n2 (507 ms down)",
		"job 1   i1                   failover → n3 (100 ms down), replace-disks → n1 (0 ms down)",
		"Longest: 507 ms, z1 in job 0 (downtime: 507 ms = 200 ms stop and start + 204 ms final delta).",
		"Nothing moves until you approve: drove approve r1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
}
