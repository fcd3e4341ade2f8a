package gateway

import (
	"fmt"
	"sync"
	"time"
)

// Refusals are audited, but a client must not be able to turn bad tokens
// into unbounded writes to the log. refusalBudget bounds them: each
// refusal is appended on its own while a token bucket has room (Burst at
// once, Rate per second after); past that, refusals are folded into one
// count per (subject, reason), and each count is appended as one
// AuditRecorded ("N refusals folded ...") once the bucket has room again.
// Gateway.Run offers the folded counts every second and at shutdown, and
// every refusal that finds room offers them first, so a folded count is
// written within about a second of the flood ending. The map of counts is
// bounded too: past maxFoldedKeys, further keys share one "other" count.
// What is not yet written when the process dies is lost, as the refusals
// themselves would be: they changed nothing.
type refusalBudget struct {
	mu     sync.Mutex
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time
	folded map[foldKey]*foldedRefusals
	order  []foldKey // keys in the order first folded, for a stable output
	now    func() time.Time
}

const maxFoldedKeys = 256

type foldKey struct{ subject, why string }

var otherRefusals = foldKey{subject: "various callers", why: "more refusal reasons than the gateway counts apart"}

type foldedRefusals struct {
	n           int
	first, last time.Time
	sample      string // the first refused request, "METHOD path"
}

// foldedRecord is a folded count ready to be appended.
type foldedRecord struct {
	foldKey
	foldedRefusals
}

func newRefusalBudget(rate float64, burst int) *refusalBudget {
	return &refusalBudget{rate: rate, burst: float64(burst), tokens: float64(burst),
		folded: map[foldKey]*foldedRefusals{}, now: time.Now}
}

// refill adds the tokens earned since the last call; mu is held.
func (b *refusalBudget) refill() {
	now := b.now()
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
}

// admit takes a token for one refusal of subject for why, or folds it
// into its count and reports false.
func (b *refusalBudget) admit(subject, why, what string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	if b.tokens >= 1 && len(b.folded) == 0 {
		b.tokens--
		return true
	}
	k := foldKey{subject, why}
	f, ok := b.folded[k]
	if !ok && len(b.folded) >= maxFoldedKeys-1 { // one slot kept for "other"
		k, f, ok = otherRefusals, b.folded[otherRefusals], b.folded[otherRefusals] != nil
	}
	if !ok {
		f = &foldedRefusals{first: b.now(), sample: what}
		b.folded[k] = f
		b.order = append(b.order, k)
	}
	f.n++
	f.last = b.now()
	return false
}

// due takes, oldest first, the folded counts the bucket has room for.
func (b *refusalBudget) due() []foldedRecord {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	var out []foldedRecord
	for len(b.order) > 0 && b.tokens >= 1 {
		k := b.order[0]
		b.order = b.order[1:]
		out = append(out, foldedRecord{k, *b.folded[k]})
		delete(b.folded, k)
		b.tokens--
	}
	return out
}

// detail says what a folded record stands for.
func (r foldedRecord) detail() string {
	return fmt.Sprintf("%d refusals folded into this record (audit budget exceeded) between %s and %s: %s; first: %s",
		r.n, r.first.UTC().Format(time.RFC3339Nano), r.last.UTC().Format(time.RFC3339Nano), r.why, r.sample)
}
