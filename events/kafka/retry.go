package kafka

import (
	"context"
	"errors"
	"time"
)

// Middleware wraps a Handler; retries, dead letters and metrics are written
// as middleware so handlers stay plain functions.
type Middleware func(Handler) Handler

// Retry calls the handler up to n more times after a failure, waiting
// backoff before the first retry and doubling the wait each time. It gives
// up early when ctx is done. The consumer commits nothing while it waits,
// so a retry that finally succeeds loses nothing.
func Retry(n int, backoff time.Duration) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, rec Record) error {
			wait := backoff
			for attempt := 0; ; attempt++ {
				err := next(ctx, rec)
				if err == nil || attempt >= n {
					return err
				}
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return errors.Join(err, ctx.Err())
				case <-t.C:
				}
				wait *= 2
			}
		}
	}
}
