package sim

import (
	"errors"

	"github.com/drovehq/drove/events/retry"
)

var (
	// ErrInvalidConfig is returned by New and Inject for a Config or Fault
	// that does not validate; the message lists every problem.
	ErrInvalidConfig = retry.Permanent(errors.New("sim: invalid config"))

	// ErrUnknownInstance is returned by Locate for an instance the
	// simulator has never been asked to move.
	ErrUnknownInstance = errors.New("sim: unknown instance")

	// ErrInjected is wrapped by every fault the simulator injects (as
	// executor.Transient or executor.Fatal), so tests can tell an injected
	// fault from a real bug.
	ErrInjected = errors.New("sim: injected fault")

	// ErrBusy is returned (as fatal) when a move is asked of an instance
	// that is already moving: RFD 34 allows one migration at a time.
	ErrBusy = errors.New("sim: instance is already moving")

	// ErrNotThere is returned (as fatal) when the instance is neither where
	// the opcode says it is nor already at the target.
	ErrNotThere = errors.New("sim: instance is not where the opcode says")
)
