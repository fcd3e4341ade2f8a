package supervise

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/drovehq/drove/events/retry"
)

// ErrStopped is what a part that returned nil before its context ended
// is restarted for: a part is meant to run until told to stop.
var ErrStopped = errors.New("supervise: part stopped by itself")

// Part names what is supervised and how.
type Part struct {
	// Name is the part's name in logs ("projector", "executor/node-1").
	Name string
	// Log hears every restart. Default slog.Default().
	Log *slog.Logger
	// Backoff paces restarts. Default: from 200ms doubling to 5s, without
	// end.
	Backoff retry.Backoff
	// Permanent says which errors no restart cures. Default Permanent.
	Permanent func(error) bool
	// OnRestart, if set, hears each restart (n counts from 1) before its wait.
	OnRestart func(n int, err error)
}

// Run calls run until ctx ends (it then returns nil) or run fails with an
// error Permanent reports (returned as is). Every other end, nil included,
// restarts run after a wait. run must build what it runs afresh each
// call: a part's clients are closed when it returns.
func Run(ctx context.Context, p Part, run func(context.Context) error) error {
	if p.Log == nil {
		p.Log = slog.Default()
	}
	if p.Backoff == (retry.Backoff{}) {
		p.Backoff = retry.Backoff{Initial: 200 * time.Millisecond, Max: 5 * time.Second}
	}
	if p.Permanent == nil {
		p.Permanent = Permanent
	}
	err := p.Backoff.Do(ctx, func(err error) bool { return !p.Permanent(err) },
		func(int) error {
			err := run(ctx)
			if err == nil && ctx.Err() == nil {
				return ErrStopped
			}
			return err
		},
		func(next int, err error, wait time.Duration) {
			p.Log.Error("part stopped; restarting it", "part", p.Name, "restart", next-1, "in", wait, "err", err)
			if p.OnRestart != nil {
				p.OnRestart(next-1, err)
			}
		})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Permanent reports the errors no restart cures: those that wrap
// retry.ErrPermanent. Each package marks its own (a configuration that
// does not validate, a topic the broker keeps with settings that would
// lose events, an event this build cannot decode, a schema of the views
// that is not this build's, fencing by a newer instance of the same
// producer, which restarting would fence back), so the supervisor needs
// to know nothing of the parts it runs.
func Permanent(err error) bool {
	return errors.Is(err, retry.ErrPermanent)
}
