package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/drovehq/drove/events/retry"
)

var errBoom = errors.New("boom")

func TestWaitDoublesUpToTheCap(t *testing.T) {
	t.Parallel()
	b := retry.Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	for n, want := range map[int]time.Duration{2: 100 * time.Millisecond, 3: 200 * time.Millisecond,
		4: 400 * time.Millisecond, 5: 800 * time.Millisecond, 6: time.Second, 9: time.Second} {
		if got := b.Wait(n); got != want {
			t.Errorf("Wait(%d) = %s, want %s", n, got, want)
		}
	}
	if got := (retry.Backoff{Initial: time.Second}).Wait(8); got != 64*time.Second {
		t.Errorf("uncapped Wait(8) = %s, want 64s", got)
	}
}

// Do retries what retryable accepts, hears each retry before its wait, and
// returns the first error retryable refuses, as try returned it.
func TestDoStopsAtAnErrorNotRetryable(t *testing.T) {
	t.Parallel()
	var tries, retries []int
	fatal := errors.New("fatal")
	err := retry.Backoff{Initial: time.Millisecond}.Do(t.Context(), func(err error) bool { return err == errBoom },
		func(n int) error {
			tries = append(tries, n)
			if n < 3 {
				return errBoom
			}
			return fatal
		}, func(next int, err error, _ time.Duration) { retries = append(retries, next) })
	if err != fatal || len(tries) != 3 || fmt.Sprint(retries) != "[2 3]" {
		t.Fatalf("Do = %v after tries %v, retries %v; want fatal after 3 tries, retries [2 3]", err, tries, retries)
	}
}

// Tries bounds the tries, the first included; the last error is returned.
func TestDoGivesUpAfterTries(t *testing.T) {
	t.Parallel()
	calls := 0
	err := retry.Backoff{Tries: 4, Initial: time.Microsecond}.Do(t.Context(), nil,
		func(int) error { calls++; return errBoom }, nil)
	if err != errBoom || calls != 4 {
		t.Fatalf("Do = %v after %d calls; want boom after 4", err, calls)
	}
}

// A context that ends during a wait ends Do with the last error at once.
func TestDoStopsWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	err := retry.Backoff{Initial: time.Hour}.Do(ctx, nil, func(int) error { calls++; return errBoom },
		func(int, error, time.Duration) { cancel() })
	if err != errBoom || calls != 1 || ctx.Err() == nil {
		t.Fatalf("Do = %v after %d calls; want boom after 1, the context ended", err, calls)
	}
}

// A sentinel marked permanent keeps its message and its identity, and
// whatever wraps it is permanent too.
func TestPermanentKeepsTheSentinel(t *testing.T) {
	t.Parallel()
	errInvalid := retry.Permanent(errors.New("svc: invalid config"))
	err := fmt.Errorf("%w: Brokers: empty", errInvalid)
	if err.Error() != "svc: invalid config: Brokers: empty" {
		t.Errorf("message %q", err)
	}
	if !errors.Is(err, errInvalid) || !errors.Is(err, retry.ErrPermanent) {
		t.Errorf("errors.Is: sentinel %v, permanent %v; want both", errors.Is(err, errInvalid), errors.Is(err, retry.ErrPermanent))
	}
	if errors.Is(errBoom, retry.ErrPermanent) || retry.Permanent(nil) != nil {
		t.Error("an unmarked error reads permanent, or Permanent(nil) is not nil")
	}
}
