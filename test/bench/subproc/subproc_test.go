package subproc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWaitSeesAMarkerAndItsLine(t *testing.T) {
	log := filepath.Join(t.TempDir(), "p.log")
	p, err := Start("p", "sh", []string{"-c", `echo "starting" >&2; echo "x=$X ready now" >&2; exec sleep 60`},
		[]string{"X=1"}, log, "ready", "never")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	m, err := p.Wait(context.Background(), "ready", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if m.Line != "x=1 ready now" || m.At.IsZero() {
		t.Fatalf("mark %+v, want the whole line (with the env given) and its time", m)
	}
	if !p.Seen("ready") || p.Seen("never") {
		t.Fatalf("Seen: ready %v, never %v", p.Seen("ready"), p.Seen("never"))
	}
	p.Stop()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "starting\nx=1 ready now\n") {
		t.Fatalf("log %q lacks the process's lines", b)
	}
}

func TestWaitFailsWhenTheProcessEndsFirst(t *testing.T) {
	p, err := Start("p", "sh", []string{"-c", "echo bye >&2; exit 3"}, nil, filepath.Join(t.TempDir(), "p.log"), "ready")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Wait(context.Background(), "ready", time.Minute)
	if err == nil || !strings.Contains(err.Error(), "exited before saying") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("err %v, want the early exit and its status", err)
	}
}

func TestDroveBinaryTakesTheOneGiven(t *testing.T) {
	got, err := DroveBinary(context.Background(), "some/drove", t.TempDir())
	if err != nil || !filepath.IsAbs(got) || !strings.HasSuffix(got, "some/drove") {
		t.Fatalf("DroveBinary = %q, %v; want the given path made absolute", got, err)
	}
}
