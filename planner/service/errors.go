package service

import (
	"errors"

	"github.com/drovehq/drove/events/retry"
)

// Sentinel errors of the planner service. Errors from Kafka keep the
// events/kafka sentinels underneath (kafka.ErrFenced, kafka.ErrUncertain,
// ...), so callers can tell a fenced instance from a broken broker.
var (
	// ErrInvalidConfig is returned by New when the Config does not
	// validate; the message lists every problem.
	ErrInvalidConfig = retry.Permanent(errors.New("planner service: invalid config"))

	// ErrAppend is returned by Run when decisions could not be appended
	// after retries. The decisions were already applied to the in-memory
	// state, so Run stops rather than go on from a state the log does not
	// hold; the next start rebuilds the state from the log and decides
	// again.
	ErrAppend = errors.New("planner service: append failed")
)
