package gateway

import (
	"fmt"
	"testing"
	"time"
)

// A flood of refusals is written as Burst records, then folded into one
// count per (subject, reason) that is written when the bucket refills;
// nothing is counted twice or lost.
func TestRefusalBudgetFoldsAFlood(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	b := newRefusalBudget(5, 20)
	b.now = func() time.Time { return now }
	written := 0
	for i := range 1000 {
		if b.admit("anonymous (unauthenticated)", "unknown token", fmt.Sprintf("GET /v1/nodes/%d", i)) {
			written++
		}
	}
	if written != 20 {
		t.Fatalf("%d refusals written one by one, want the burst of 20", written)
	}
	if due := b.due(); len(due) != 0 {
		t.Fatalf("folded counts written with an empty bucket: %+v", due)
	}
	now = now.Add(time.Second)
	due := b.due()
	if len(due) != 1 || due[0].n != 980 || due[0].sample != "GET /v1/nodes/20" {
		t.Fatalf("after a second: %+v, want one count of 980 starting at request 20", due)
	}
	if !b.admit("anonymous (unauthenticated)", "unknown token", "GET /") {
		t.Fatal("with room in the bucket and nothing folded, a refusal is written on its own")
	}
}

// The folded counts are bounded: past maxFoldedKeys subjects, the rest
// share one count.
func TestRefusalBudgetBoundsItsCounts(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	b := newRefusalBudget(1, 1)
	b.now = func() time.Time { return now }
	for i := range 10 * maxFoldedKeys {
		b.admit(fmt.Sprintf("caller-%d", i), "unknown token", "GET /")
	}
	if len(b.folded) > maxFoldedKeys {
		t.Fatalf("%d counts kept, the bound is %d", len(b.folded), maxFoldedKeys)
	}
	total := 0
	for range 10 * maxFoldedKeys {
		now = now.Add(time.Second)
		for _, r := range b.due() {
			total += r.n
		}
	}
	if total != 10*maxFoldedKeys-1 {
		t.Fatalf("folded counts add up to %d, want %d", total, 10*maxFoldedKeys-1)
	}
}
