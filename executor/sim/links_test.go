package sim

import (
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/planner"
)

const mb = 1 << 20

func testLinks(slow string) *Links {
	return NewLinks(func(n string) planner.Link {
		if n == slow {
			return planner.Link{Send: 10 * mb, Receive: 10 * mb}
		}
		return planner.Link{Send: 100 * mb, Receive: 100 * mb}
	})
}

// Transfers that share a link share its bandwidth, and a slow end holds a
// transfer down whatever the other end could do.
func TestLinksShareBandwidth(t *testing.T) {
	l := testLinks("slow")
	a := l.open("n1", "n2")
	if r := l.rate(a); r != 100*mb {
		t.Fatalf("alone: %d B/s, want the link's 100 MiB/s", r)
	}
	b := l.open("n1", "n3")
	if ra, rb := l.rate(a), l.rate(b); ra != 50*mb || rb != 50*mb {
		t.Fatalf("two from n1: %d and %d B/s, want half each", ra, rb)
	}
	c := l.open("n1", "slow")
	if ra, rc := l.rate(a), l.rate(c); rc != 10*mb || ra != 45*mb {
		t.Fatalf("with one into a slow node: %d and %d B/s, want 45 MiB/s and 10 MiB/s", ra, rc)
	}
	l.close(b)
	l.close(c)
	if r := l.rate(a); r != 100*mb {
		t.Fatalf("alone again: %d B/s, want 100 MiB/s", r)
	}
}

// A move through the driver runs at what its links give it, not at
// Config.Bandwidth: here the target's 10 MiB/s.
func TestMoveRunsAtItsLinksRate(t *testing.T) {
	op := replicated()
	d := newSim(t, Config{Links: testLinks(op.To)})
	var rates []int64
	_, err := d.Run(t.Context(), op, func(p executor.Progress) {
		if p.Phase == events.PhaseSync && p.BytesPerSecond > 0 {
			rates = append(rates, p.BytesPerSecond)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rates) == 0 {
		t.Fatal("no sync progress with a rate")
	}
	for _, r := range rates {
		if r != 10*mb {
			t.Fatalf("reported %d B/s, want the slow target's 10 MiB/s (op %s → %s)", r, op.From, op.To)
		}
	}
}
