package termview

import (
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/progress"
	"github.com/drovehq/drove/gateway/wire"
)

func ev(t *testing.T, p events.Payload) client.Event {
	t.Helper()
	env := events.New(p)
	return client.Event{WatchLine: wire.WatchLine{Time: time.Now(), Type: env.Type, Payload: env.Payload}}
}

// TestJobPercentComesFromBytes: a job released without its plan seen still
// counts its opcodes, and its percentage follows the bytes, not the count
// of opcodes done.
func TestJobPercentComesFromBytes(t *testing.T) {
	p := &Progress{Request: "r"}
	ops := []events.Opcode{{OpID: events.OpInstanceFailover, Instance: "i1"}, {OpID: events.OpInstanceReplaceDisks, Instance: "i1", RemoteNode: "n2"}}
	p.Apply(ev(t, events.JobReleased{Request: "r", Job: events.Job{Index: 0, Opcodes: ops}}))
	p.Apply(ev(t, events.OpcodeDispatched{Request: "r", Job: 0, Index: 0, Node: "n1", Opcode: ops[0]}))
	j := p.Jobs[0]
	if strings.Contains(Line(j), "op 1/0") || !strings.Contains(Line(j), "op 1/2") {
		t.Fatalf("first line: %q", Line(j))
	}
	p.Apply(ev(t, events.OpcodeDispatched{Request: "r", Job: 0, Index: 1, Node: "n1", Opcode: ops[1]}))
	p.Apply(ev(t, events.Progress{Request: "r", Job: 0, Index: 1, Phase: "sync", State: events.ProgressRunning,
		Current: 25 << 20, Total: 100 << 20, BytesPerSecond: 5 << 20}))
	if got := j.Percent; got != 25 {
		t.Fatalf("percent = %v, want 25 (bytes), not 75 (opcodes)", got)
	}
	if eta := progress.Remaining(j); eta != 15*time.Second {
		t.Fatalf("ETA = %v, want 15s from the bytes left and the rate", eta)
	}
	table := strings.Join(p.Table(10), "\n")
	for _, want := range []string{"25.0%", "25.0 MiB / 100.0 MiB", "5.0 MiB/s", "15s", "all", "0/1 jobs done, 1 running"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

// TestScreenRedrawsInPlace: the second draw moves the cursor back over the
// first and blanks the lines it no longer uses.
func TestScreenRedrawsInPlace(t *testing.T) {
	var b strings.Builder
	s := &Screen{Out: &b, Width: 20, Height: 10}
	s.Draw([]string{"one", "two", "a line far wider than the screen"})
	first := b.String()
	if strings.HasPrefix(first, "\r") {
		t.Fatalf("the first draw moved up: %q", first)
	}
	if !strings.Contains(first, "a line far wider t…") {
		t.Fatalf("a wide line was not cut to the width: %q", first)
	}
	b.Reset()
	s.Draw([]string{"only"})
	if got := b.String(); !strings.HasPrefix(got, "\r\x1b[3A") || !strings.HasSuffix(got, "\x1b[2A") {
		t.Fatalf("second draw = %q: want up 3, draw, blank 2, up 2", got)
	}
}

func TestMigrationViewTable(t *testing.T) {
	v := &MigrationView{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pct, cur, total := 50.0, int64(50<<20), int64(100<<20)
	v.Apply(wire.MigrationLine{Type: "end", Migration: "m", Index: 0, Phase: "begin", State: "successful", Time: t0.Add(time.Second), Started: &t0})
	v.Apply(wire.MigrationLine{Type: "progress", Migration: "m", Index: 1, Phase: "sync", Time: t0.Add(3 * time.Second),
		Current: &cur, Total: &total, Percent: &pct, ETA: 4000, Rate: 10 << 20})
	out := strings.Join(v.Table(t0.Add(4*time.Second)), "\n")
	for _, want := range []string{"✓  making a reservation", "☐  synchronizing filesystems", "50%", "50.0 MiB / 100.0 MiB", "10.0 MiB/s", "4.0s", "total", "running"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
