package e2e

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// checkHistories: an evacuated instance's, the migrated instance's, the
// node's, the request's and the migration's histories, against the log;
// owners read only their own.
func checkHistories(t *testing.T, e *env, bin string, opsEnv []string, request, node string, before []instance, migrated, migration string) {
	requester := e.api.Actor // operators are named by X-Drove-Actor
	// The views hold the whole story: the watch saw the request finish,
	// and the instances view the rollback (history rows commit with the
	// effects they explain).
	// Every placement of an evacuated instance, with who asked and why.
	x := before[0].Name
	hx := historyOf(t, bin, opsEnv, "instance", x)
	if got, want := placementsInHistory(hx), placementsInLog(t, e.kcfg, x); !slices.Equal(got, want) || len(want) < 2 {
		t.Fatalf("history of %s places it %v; the log %v", x, got, want)
	}
	offNode := false
	for _, h := range hx {
		if h.Type != events.TypeInstancePlaced {
			continue
		}
		if h.Request != request || h.Requester != requester || !strings.Contains(h.Why, "e2e: audit, disk swap") || h.Before == nil {
			t.Errorf("%s's placement by the evacuation: %+v", x, h)
		}
		offNode = offNode || h.Before != nil && (h.Before.Primary == node || h.Before.Secondary == node)
	}
	if !offNode {
		t.Errorf("no placement in %s's history takes it off %s", x, node)
	}
	checkLogOrder(t, hx)
	if out, code := drove(t, bin, opsEnv, "history", "instance", x); code != 0 ||
		!strings.Contains(out, "TIME") || !strings.Contains(out, "e2e: audit, disk swap") || !strings.Contains(out, "placed: ") {
		t.Errorf("drove history instance %s (exit %d):\n%s", x, code, out)
	} else {
		t.Logf("drove history instance %s:\n%s", x, out)
	}

	// The migrated instance: there and back, each placement the
	// migration's, asked by the operator token's account.
	hm := historyOf(t, bin, opsEnv, "instance", migrated)
	placed := placementsInHistory(hm)
	if want := placementsInLog(t, e.kcfg, migrated); !slices.Equal(placed, want) || len(placed) < 3 || placed[len(placed)-1] != placed[0] {
		t.Fatalf("history of %s places it %v; the log %v (want there and back)", migrated, placed, want)
	}
	for _, h := range hm {
		if h.Type == events.TypeInstancePlaced && (h.Migration != migration || h.Requester != "ops" || !strings.Contains(h.RequesterWhy, "rebalance")) {
			t.Errorf("%s's placement by the migration: %+v", migrated, h)
		}
	}

	// The migration: its records' state transitions, in order.
	var states []string
	for _, h := range historyOf(t, bin, opsEnv, "migration", migration) {
		if h.Type == events.TypeMigrationStateChanged {
			if len(states) > 0 && h.From != states[len(states)-1] {
				t.Errorf("migration record %s -> %s follows %s", h.From, h.To, states[len(states)-1])
			}
			states = append(states, h.To)
		}
	}
	if len(states) < 3 || states[len(states)-1] != "aborted" || !slices.Contains(states, "successful") {
		t.Errorf("migration %s went through %v", migration, states)
	}

	checkNodeAndRequest(t, e, bin, opsEnv, request, node, before)

	// Owners: their own instances' histories, nothing else.
	checkOwnersHistories(t, e, request, node, migrated, migration)
}

// checkNodeAndRequest: the node's history holds its drain and every
// instance that left it; the request's, its whole story.
func checkNodeAndRequest(t *testing.T, e *env, bin string, opsEnv []string, request, node string, before []instance) {
	requester := e.api.Actor
	// The node: drained by the request, and every instance that left it.
	out, code := drove(t, bin, opsEnv, "history", "node", node, "--csv")
	if code != 0 {
		t.Fatalf("history node: exit %d", code)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("history node --csv: %v\n%s", err, out)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	left, drained := map[string]bool{}, false
	for _, r := range rows[1:] {
		switch r[col["type"]] {
		case events.TypeInstancePlaced:
			if strings.Contains(r[col["placement_before"]], node) && !strings.Contains(r[col["placement_after"]], node) {
				left[r[col["instance"]]] = true
			}
		case events.TypeNodeUpdated:
			drained = drained || (r[col["state_after"]] == "online, drained" && r[col["request"]] == request)
		}
	}
	var moved []string
	for _, in := range before {
		if !slices.Contains(names(e.instances(node)), in.Name) {
			moved = append(moved, in.Name)
		}
	}
	if got := slices.Sorted(maps.Keys(left)); !slices.Equal(got, moved) || len(moved) == 0 || !drained {
		t.Errorf("node history: %v left %s (want %v), drained by %s: %v", got, node, moved, request, drained)
	}

	// The request: asked, planned, every placement, finished.
	hr := historyOf(t, bin, opsEnv, "request", request)
	if len(hr) == 0 || hr[0].Type != events.TypeEvacuationRequested || hr[0].Actor != requester || hr[0].Why != "e2e: audit, disk swap" {
		t.Fatalf("request history starts %+v", hr[0])
	}
	types := map[string]int{}
	for _, h := range hr {
		types[h.Type]++
		if h.Request != request {
			t.Errorf("request history holds an event of %q: %+v", h.Request, h)
		}
	}
	if types[events.TypeRequestFinished] != 1 || types[events.TypePlanComputed] == 0 || types[events.TypeInstancePlaced] < len(moved) {
		t.Errorf("request history has %v, want a plan, a placement of each of %d instances and a finish", types, len(moved))
	}

}

// checkOwnersHistories: an owner reads its instance's and migration's
// histories; another owner none of them, nor a node's or a request's.
func checkOwnersHistories(t *testing.T, e *env, request, node, migrated, migration string) {
	ctx := context.Background()
	owner, other := e.as(tokOwnerA), e.as(tokOwnerB)
	if err := owner.History(ctx, "instance", migrated, 0, func(wire.HistoryEntry, json.RawMessage) error { return nil }); err != nil {
		t.Errorf("the owner reading its instance's history: %v", err)
	}
	if err := owner.History(ctx, "migration", migration, 0, func(wire.HistoryEntry, json.RawMessage) error { return nil }); err != nil {
		t.Errorf("the owner reading its migration's history: %v", err)
	}
	for _, c := range []struct{ kind, id string }{{"instance", migrated}, {"migration", migration}, {"node", node}, {"request", request}} {
		err := other.History(ctx, c.kind, c.id, 0, func(wire.HistoryEntry, json.RawMessage) error { return nil })
		var ae *wire.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusForbidden {
			t.Errorf("another owner reading the history of %s %s: %v, want 403", c.kind, c.id, err)
		}
	}
}

func lastType(hs []wire.HistoryEntry) string {
	if len(hs) == 0 {
		return ""
	}
	return hs[len(hs)-1].Type
}

// checkLogOrder: a history is in log order, each partition's offsets
// rising.
func checkLogOrder(t *testing.T, hs []wire.HistoryEntry) {
	t.Helper()
	last := map[string]int64{}
	for _, h := range hs {
		k := fmt.Sprintf("%s/%d", h.Topic, h.Partition)
		if o, ok := last[k]; ok && h.Offset <= o {
			t.Errorf("history out of log order at %s@%d (after %d)", k, h.Offset, o)
		}
		last[k] = h.Offset
	}
}

// checkAuditCommand: `drove audit` lists the evacuation with who asked
// and why; `drove audit --denied` lists the refusals of another owner's
// reads of the node's history (checkOwnersHistories), and owners may not
// read the trail at all.
func checkAuditCommand(t *testing.T, e *env, bin string, opsEnv []string, node string) {
	t.Helper()
	out, code := drove(t, bin, opsEnv, "audit", "--outcome", "requested")
	if code != 0 || !strings.Contains(out, "WHO") || !strings.Contains(out, "evacuate "+node) || !strings.Contains(out, "e2e: audit, disk swap") {
		t.Errorf("drove audit (exit %d):\n%s", code, out)
	}
	refused := "GET /v1/history/node/" + node
	e.waitFor("the refusal in drove audit --denied", time.Minute, func() bool {
		out, code = drove(t, bin, opsEnv, "audit", "--denied", "--who", acctB, "--json")
		return code == 0 && strings.Contains(out, refused)
	})
	for line := range strings.Lines(strings.TrimSpace(out)) {
		var a wire.AuditEntry
		if err := json.Unmarshal([]byte(line), &a); err != nil || a.Outcome != "denied" || a.Actor != acctB || a.Count < 1 {
			t.Errorf("drove audit --denied --who %s --json: %q (%v)", acctB, line, err)
		}
	}
	ownerEnv := []string{"DROVE_GATEWAY=" + e.api.Base, "DROVE_TOKEN=" + tokOwnerA}
	if out, code := drove(t, bin, ownerEnv, "audit"); code == 0 {
		t.Errorf("an owner read the audit trail:\n%s", out)
	}
}
