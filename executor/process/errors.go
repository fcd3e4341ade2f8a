package process

import (
	"errors"

	"github.com/drovehq/drove/events/retry"
)

// Sentinel errors; Run and Receive wrap them under executor.Fatal or
// executor.Transient.
var (
	// ErrInvalidConfig is returned by New when the Config does not
	// validate; the message lists every problem.
	ErrInvalidConfig = retry.Permanent(errors.New("process: invalid config"))
	// ErrNotRunning is an instance with no process on this node.
	ErrNotRunning = errors.New("process: instance not running here")
	// ErrAlreadyRunning is a Start of an instance whose process runs.
	ErrAlreadyRunning = errors.New("process: instance already running")
	// ErrExited is a process that ended within Config.Settle of its start.
	ErrExited = errors.New("process: exited at start")
	// ErrNoReceiver is a move without the executor's receiver rendezvous.
	ErrNoReceiver = errors.New("process: no receiver")
	// ErrHandoff is a handoff the target did not complete; the source runs
	// the instance again.
	ErrHandoff = errors.New("process: handoff failed")
)
