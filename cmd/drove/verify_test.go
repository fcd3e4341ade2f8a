package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/verify"
	"github.com/drovehq/drove/test/testenv"
)

// drove verify against a real broker: a clean log passes with exit 0, and
// a forged placement fails it with exit 3, naming the forged event.
func TestVerifyCommand(t *testing.T) {
	ctx := context.Background()
	k, cfg := testenv.Events(t, ctx)
	prod := k.Producer(t, cfg, "verify-test")
	reason := events.WithReason(events.Reason{Actor: "operator:test", Why: "verify test"})
	appendAll := func(ps ...events.Payload) []events.Envelope {
		t.Helper()
		var out []events.Envelope
		for _, p := range ps {
			env := events.New(p, reason, events.WithProducer("test"))
			topic, _ := events.TopicOf(env.Type)
			if err := prod.Append(ctx, topic, env); err != nil {
				t.Fatal(err)
			}
			out = append(out, env)
		}
		return out
	}
	res := events.Resources{MemoryMiB: 4096, DiskMiB: 40960}
	appendAll(
		events.GroupDeclared{Name: "g1", AllocPolicy: events.AllocPreferred},
		events.NodeAnnounced{Name: "n1", Group: "g1", Total: res, Free: res},
		events.NodeAnnounced{Name: "n2", Group: "g1", Total: res, Free: res},
		events.InstanceDeclared{Name: "web", Owner: "acct", Storage: events.StorageRBD, RunState: events.RunRunning,
			PrimaryNode: "n1", Size: events.Size{MemoryMiB: 1024}},
		events.EvacuationRequested{Request: "r1", Nodes: []string{"n9"}, Mode: events.EvacAll},
		events.RequestRejected{Request: "r1", Reason: "unknown node n9"},
	)
	brokers := strings.Join(cfg.Brokers, ",")
	t.Setenv("KAFKA_NAMESPACE", cfg.Namespace)
	code, out, errs := run(t, "", "verify", "--brokers", brokers)
	if code != exitOK || !strings.Contains(out, "OK: every invariant holds") || !strings.Contains(out, "1 requests: 0 finished, 1 rejected") {
		t.Fatalf("clean log: exit %d\n%s\n%s", code, out, errs)
	}

	forged := appendAll(events.InstancePlaced{Instance: "web", Group: "g1", PrimaryNode: "n2",
		PreviousGroup: "g1", PreviousPrimary: "n2", Request: "forged"})[0]
	code, out, errs = run(t, "", "verify", "--brokers", brokers)
	if code != exitViolations || !strings.Contains(out, "[placement] instance web placed on n2 from n2, but it was on n1") ||
		!strings.Contains(out, forged.ID) {
		t.Fatalf("forged placement: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = run(t, "", "verify", "--brokers", brokers, "--json")
	var rep verify.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitViolations || rep.OK ||
		len(rep.Violations) != 1 || rep.Violations[0].Events[1].ID != forged.ID || rep.Counts.Placements != 1 {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, out)
	}
}

func TestVerifyHelp(t *testing.T) {
	code, _, errs := run(t, "", "verify", "--help")
	if code != exitOK || !strings.Contains(errs, "Ganeti's depends") || !strings.Contains(errs, "-allow-open") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if code, _, _ := run(t, "", "verify", "extra"); code != exitUsage {
		t.Fatalf("an argument: exit %d, want %d", code, exitUsage)
	}
}

// verify-log --heads reads the heads file before the log: one missing, or
// with a line that is not a head, is refused naming the file and line.
func TestVerifyLogHeadsFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "heads.jsonl")
	if err := os.WriteFile(bad, []byte("{\"topic\":\"drove.requests\",\"records\":3}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{filepath.Join(dir, "none"): "no such file", bad: "line 2 is not a signed head"} {
		code, _, errs := run(t, "", "verify-log", "--brokers", "127.0.0.1:1", "--heads", file)
		if code != exitError || !strings.Contains(errs, want) {
			t.Errorf("verify-log --heads %s: exit %d, %q; want %q", file, code, errs, want)
		}
	}
}
