package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/events/verify"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/test/testenv"
)

// TestVerifyAfterEveryKindOfMove runs the whole system through an
// evacuation, a group change and a per-instance migration, then audits the
// log with the drove binary's verify command: every invariant holds. Then
// it forges two events (an instance placed on a second node, a job
// released before its dependency ended) and verify fails, naming both.
func TestVerifyAfterEveryKindOfMove(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	bin := testenv.Drove(t)

	evac, err := e.api.Evacuate(ctx, wire.Evacuation{Nodes: []string{"node-g2-003"}, Mode: "all", Reason: "e2e: verify"})
	if err != nil {
		t.Fatal(err)
	}
	e.finish(evac.Request, 3*time.Minute)

	var pair []string
	group := ""
	for _, in := range e.instances("") {
		if in.Storage == "drbd" && (group == "" || group == in.Group) && len(pair) < 2 {
			pair, group = append(pair, in.Name), in.Group
		}
	}
	change, err := e.api.ChangeGroup(ctx, wire.GroupChange{Instances: pair, Reason: "e2e: verify"})
	if err != nil {
		t.Fatal(err)
	}
	p := e.finish(change.Request, 3*time.Minute)
	t.Logf("group change of %v: %d moved, %d failed", pair, len(p.Moved), len(p.Failed))

	in := e.movable(1)[0]
	id := e.act(in.Name, "automatic", client.MigrateOptions{})
	m := e.awaitState(id, 2*time.Minute, "successful", "failed", "aborted")
	if m.State != "successful" {
		t.Fatalf("migration %s ended %s: %s", id, m.State, m.Error)
	}

	rep, out := runVerify(t, bin, e.kcfg)
	if !rep.OK {
		t.Fatalf("verify failed on a clean run:\n%s", out)
	}
	c := rep.Counts
	// Plans leave a node's running limit to the release (planner/jobs
	// makespan.go), so a plan this small may have no dependency at all;
	// the dependency rule is exercised by the verify package's own tests.
	if c.Finished != 2 || c.Migrations != 1 || c.Placements == 0 || c.Releases == 0 || c.Opcodes == 0 || c.Phases < 3 || c.NodeChecks == 0 {
		t.Fatalf("verify checked too little: %+v", c)
	}
	text := verifyText(t, bin, e.kcfg, 0)
	t.Logf("drove verify on the clean log:\n%s", text)

	// Forge: the migrated instance placed from its old node onto a third
	// one, and a job released before the job it depends on ended.
	fcfg := e.kcfg
	fcfg.TransactionalID = "e2e-forger"
	prod, err := kafka.NewProducer(fcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	reason := events.WithReason(events.Reason{Actor: "operator:mallory", Why: "forged"})
	third := ""
	for _, n := range e.instances("") {
		if n.Primary != m.Source && n.Primary != m.Target {
			third = n.Primary
			break
		}
	}
	placed := events.New(events.InstancePlaced{Instance: in.Name, Group: in.Group, PrimaryNode: third,
		PreviousGroup: in.Group, PreviousPrimary: m.Source, Request: "forged"}, reason, events.WithProducer("forger"))
	op := events.Opcode{OpID: events.OpInstanceMigrate, Instance: in.Name, From: m.Target, To: third}
	release := events.New(events.JobReleased{Request: "forged", Job: events.Job{Index: 1, Opcodes: []events.Opcode{op},
		Depends: []events.Dependency{{Job: -1, Statuses: []events.JobStatus{events.JobSuccess}}}}}, reason, events.WithProducer("forger"))
	if err := prod.AppendBatch(ctx, kafka.Message{Topic: events.TopicInventory, Event: placed},
		kafka.Message{Topic: events.TopicJobs, Event: release}); err != nil {
		t.Fatal(err)
	}
	text = verifyText(t, bin, e.kcfg, verifyExitViolations)
	for _, want := range []string{
		"[placement] instance " + in.Name + " placed on " + third + " from " + m.Source + ", but it was on " + m.Target,
		"[dependencies] job 1 of forged released before job 0, which it depends on, ended",
		placed.ID, release.ID,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("verify's report does not say %q", want)
		}
	}
	t.Logf("drove verify on the forged log:\n%s", text)
}

const verifyExitViolations = 3

// runVerify runs drove verify --json on the log and decodes its report.
func runVerify(t *testing.T, bin string, kcfg kafka.Config) (*verify.Report, string) {
	t.Helper()
	cmd := exec.Command(bin, "verify", "--json")
	cmd.Env = append(os.Environ(), testenv.KafkaEnv(kcfg)...)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	var rep verify.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, out)
	}
	return &rep, string(out)
}

// verifyText runs drove verify and checks its exit status.
func verifyText(t *testing.T, bin string, kcfg kafka.Config, want int) string {
	t.Helper()
	cmd := exec.Command(bin, "verify")
	cmd.Env = append(os.Environ(), testenv.KafkaEnv(kcfg)...)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if code := cmd.ProcessState.ExitCode(); code != want {
		t.Fatalf("drove verify exited %d, want %d:\n%s", code, want, out)
	}
	return string(out)
}
