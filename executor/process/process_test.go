package process_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/process"
	"github.com/drovehq/drove/test/syncbuf"
)

func newNode(t *testing.T, name string, command func(string) ([]string, error)) *process.Driver {
	t.Helper()
	d, err := process.New(process.Config{Node: name, Dir: t.TempDir(), Command: command, StopTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Destroy)
	return d
}

// sleeper is an instance's process: it writes the node it runs on into a
// file, then sleeps.
func sleeper(out string) func(string) ([]string, error) {
	return func(inst string) ([]string, error) {
		return []string{"sh", "-c", `echo "$DROVE_NODE" > ` + out + `; exec sleep 600`}, nil
	}
}

func opFor(inst, from, to string) executor.Op {
	return executor.Op{Request: "r", Kind: events.OpInstanceMigrate, Instance: inst,
		Storage: events.StorageZFSLocal, RunState: events.RunRunning, From: from, To: to, Primary: from, Attempt: 1}
}

// handoff runs Run on src and Receive on dst, wired as two executors.
func handoff(t *testing.T, ctx context.Context, src, dst *process.Driver, op executor.Op) (executor.Result, error, error) {
	t.Helper()
	addr := make(chan string, 1)
	op.AwaitReceiver = func(ctx context.Context) (string, error) {
		select {
		case a := <-addr:
			return a, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	recv := make(chan error, 1)
	go func() { recv <- dst.Receive(ctx, op, func(a string) { addr <- a }, func(executor.Progress) {}) }()
	res, err := src.Run(ctx, op, func(executor.Progress) {})
	select {
	case rerr := <-recv:
		return res, err, rerr
	case <-time.After(20 * time.Second):
		t.Fatal("Receive did not return")
	}
	return res, err, nil
}

func TestMoveStopsOnSourceAndStartsOnTarget(t *testing.T) {
	out := filepath.Join(t.TempDir(), "where")
	a, b := newNode(t, "pa", sleeper(out)), newNode(t, "pb", sleeper(out))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Start(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	before, _ := a.Status(ctx, "c1")
	op := opFor("c1", "pa", "pb")
	res, err, rerr := handoff(t, ctx, a, b, op)
	if err != nil || rerr != nil {
		t.Fatalf("Run: %v; Receive: %v", err, rerr)
	}
	t.Logf("result: %+v", res)
	if st, _ := a.Status(ctx, "c1"); st.Status != events.StatusDown {
		t.Errorf("source: %+v, want down", st)
	}
	st, _ := b.Status(ctx, "c1")
	if st.Status != events.StatusUp || st.Pid == before.Pid {
		t.Errorf("target: %+v, want up in a new process", st)
	}
	if got, _ := os.ReadFile(out); strings.TrimSpace(string(got)) != "pb" {
		t.Errorf("the process last ran on %q, want pb", got)
	}
	if res.Downtime <= 0 {
		t.Errorf("downtime %v", res.Downtime)
	}
	// A second Run of the same opcode, as after a crash, succeeds at once.
	op.AwaitReceiver = func(context.Context) (string, error) { return "", errors.New("no receiver") }
	if _, err := a.Run(ctx, op, func(executor.Progress) {}); err != nil {
		t.Errorf("second Run: %v", err)
	}
}

func TestFailedStartOnTargetKeepsTheSourceUp(t *testing.T) {
	out := filepath.Join(t.TempDir(), "where")
	a := newNode(t, "pa", sleeper(out))
	b := newNode(t, "pb", func(string) ([]string, error) { return []string{"false"}, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Start(ctx, "c2"); err != nil {
		t.Fatal(err)
	}
	_, err, rerr := handoff(t, ctx, a, b, opFor("c2", "pa", "pb"))
	if !errors.Is(err, process.ErrHandoff) || !errors.Is(err, executor.ErrFatal) {
		t.Fatalf("Run: %v, want a fatal ErrHandoff", err)
	}
	if rerr == nil {
		t.Error("Receive succeeded")
	}
	if st, _ := a.Status(ctx, "c2"); st.Status != events.StatusUp {
		t.Errorf("source: %+v, want up again", st)
	}
	if st, _ := b.Status(ctx, "c2"); st.Running {
		t.Errorf("target: %+v, want down", st)
	}
}

func TestCancelBeforeHandoffLeavesTheSourceAlone(t *testing.T) {
	out := filepath.Join(t.TempDir(), "where")
	a := newNode(t, "pa", sleeper(out))
	ctx, cancel := context.WithCancel(context.Background())
	if err := a.Start(ctx, "c3"); err != nil {
		t.Fatal(err)
	}
	before, _ := a.Status(ctx, "c3")
	op := opFor("c3", "pa", "pb")
	op.AwaitReceiver = func(ctx context.Context) (string, error) { <-ctx.Done(); return "", ctx.Err() }
	cancel()
	if _, err := a.Run(ctx, op, func(executor.Progress) {}); !errors.Is(err, executor.ErrCanceled) {
		t.Fatalf("Run: %v, want ErrCanceled", err)
	}
	if st, _ := a.Status(context.Background(), "c3"); st.Pid != before.Pid {
		t.Errorf("source: %+v, want the same process up", st)
	}
}

// A process that ends on its own after its start was called good is
// reported, with how it ended; one that Stop ends is not.
func TestUnexpectedExitIsReported(t *testing.T) {
	dir := t.TempDir()
	trigger := filepath.Join(dir, "exit-now")
	var logs syncbuf.Buffer
	d, err := process.New(process.Config{Node: "pa", Dir: dir, StopTimeout: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Command: func(inst string) ([]string, error) {
			if inst == "dies" {
				return []string{"sh", "-c", `while [ ! -e "$1" ]; do sleep 0.01; done; exit 3`, "dies", trigger}, nil
			}
			return []string{"sleep", "600"}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Destroy)
	ctx := context.Background()
	for _, inst := range []string{"dies", "stopped"} {
		if err := d.Start(ctx, inst); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Stop(ctx, "stopped"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trigger, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "process exited unexpectedly") {
		if time.Now().After(deadline) {
			t.Fatalf("no report of the exit within 30s; logs:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond) // polling the log
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(l, "exited unexpectedly") {
			continue
		}
		if !strings.Contains(l, "instance=dies") || !strings.Contains(l, "exit status 3") {
			t.Errorf("report %q, want instance dies with exit status 3", l)
		}
	}
	if st, _ := d.Status(ctx, "dies"); st.Running {
		t.Errorf("status %+v after the exit, want down", st)
	}
}
