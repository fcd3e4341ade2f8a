package transfer

import (
	"context"
	"sync"
	"time"
)

// Limiter is a token bucket over bytes. Rate 0 means no limit. It is safe
// for concurrent use, and SetRate applies to waits already under way
// within maxSleep.
type Limiter struct {
	mu     sync.Mutex
	rate   int64   // bytes per second; 0 = unlimited
	tokens float64 // may go negative: a debt paid by waiting
	last   time.Time
}

// maxSleep bounds one sleep so a rate change takes effect quickly.
const maxSleep = 100 * time.Millisecond

// NewLimiter returns a limiter admitting bytesPerSecond (0: unlimited).
func NewLimiter(bytesPerSecond int64) *Limiter {
	return &Limiter{rate: max(bytesPerSecond, 0), last: time.Now()}
}

// MbitPerSecond converts a rate in Mbit/s (RFD 34's unit) to bytes/s.
func MbitPerSecond(mbps float64) int64 { return int64(mbps * 1e6 / 8) }

// SetRate changes the rate; 0 removes the limit.
func (l *Limiter) SetRate(bytesPerSecond int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(time.Now())
	l.rate = max(bytesPerSecond, 0)
}

// Rate is the current rate in bytes per second (0: unlimited). A nil
// limiter has no limit.
func (l *Limiter) Rate() int64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rate
}

// burst is the most the bucket saves up: 50 ms of the rate, at least
// 64 KiB so one chunk always fits.
func (l *Limiter) burst() float64 { return max(float64(l.rate)/20, 64<<10) }

func (l *Limiter) refill(now time.Time) {
	if l.rate > 0 {
		l.tokens = min(l.tokens+now.Sub(l.last).Seconds()*float64(l.rate), l.burst())
	}
	l.last = now
}

// WaitN takes n bytes from the bucket, waiting while it is in debt.
func (l *Limiter) WaitN(ctx context.Context, n int) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	l.refill(time.Now())
	if l.rate == 0 {
		l.mu.Unlock()
		return nil
	}
	l.tokens -= float64(n)
	l.mu.Unlock()
	for {
		l.mu.Lock()
		l.refill(time.Now())
		if l.tokens >= 0 || l.rate == 0 {
			l.mu.Unlock()
			return nil
		}
		wait := time.Duration(-l.tokens / float64(l.rate) * float64(time.Second))
		l.mu.Unlock()
		t := time.NewTimer(min(wait, maxSleep))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}
