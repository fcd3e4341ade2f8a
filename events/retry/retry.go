package retry

import (
	"context"
	"time"
)

// Backoff is Drove's one way of trying a step again: an append the broker
// refused for a while, a driver step that hit a transient fault, a read
// the broker could not serve, a part the supervisor restarts. Every
// service retries through [Backoff.Do], so the waits, the cap and what
// ends the tries are the same everywhere.
type Backoff struct {
	// Tries is the number of tries in all, the first included; 0 tries
	// until the step succeeds, fails for good, or ctx is done.
	Tries int
	// Initial is the wait before the second try; each later wait doubles.
	Initial time.Duration
	// Max caps one wait; 0 leaves it uncapped.
	Max time.Duration
}

// Wait is the wait before try n (n ≥ 2).
func (b Backoff) Wait(n int) time.Duration {
	d := b.Initial
	for i := 2; i < n && (b.Max == 0 || d < b.Max); i++ {
		d *= 2
	}
	if b.Max > 0 {
		return min(d, b.Max)
	}
	return d
}

// Do calls try with the try's number (1, 2, ...) until it returns nil, an
// error retryable refuses (nil retryable retries every error), the tries run
// out, or ctx is done. Before each wait it calls onRetry (which may be nil)
// with the next try's number, the error and the wait, so callers log and
// count in their own words. It returns the last error as try returned it;
// a caller that must tell "gave up" from "was stopped" asks ctx.Err().
func (b Backoff) Do(ctx context.Context, retryable func(error) bool, try func(n int) error,
	onRetry func(next int, err error, wait time.Duration)) error {
	for n := 1; ; n++ {
		err := try(n)
		if err == nil || ctx.Err() != nil || (b.Tries > 0 && n >= b.Tries) ||
			(retryable != nil && !retryable(err)) {
			return err
		}
		wait := b.Wait(n + 1)
		if onRetry != nil {
			onRetry(n+1, err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
