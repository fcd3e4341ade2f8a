package executor

import (
	"errors"
	"fmt"

	"github.com/drovehq/drove/events/retry"
)

// Sentinel errors. Drivers classify their failures with Transient and
// Fatal; the executor branches on these with errors.Is, and an operator
// reads the wrapped message.
var (
	// ErrTransient marks a fault worth retrying: a dropped connection, a
	// send that broke off, a node that did not answer in time. The executor
	// retries the opcode with backoff; a driver that can resume (a ZFS
	// receive token, a half-copied memory image) resumes on the next
	// attempt.
	ErrTransient = errors.New("executor: transient fault")

	// ErrFatal marks a fault no retry can fix: the target refused the
	// data, a disk is missing, the instance is in a state the opcode does
	// not apply to. The driver has rolled back before returning it, so the
	// instance is where it was; the opcode ends with status error.
	ErrFatal = errors.New("executor: fatal fault")

	// ErrCanceled is returned by a driver whose context was cancelled: it
	// aborted the move and rolled back (RFD 34's abort: the source is as it
	// was, NICs included). The executor ends the opcode with status
	// canceled when the cancellation was asked for (OpcodeCancelled).
	ErrCanceled = errors.New("executor: canceled")

	// ErrInvalidConfig is returned by New when the Config does not
	// validate; the message lists every problem.
	ErrInvalidConfig = retry.Permanent(errors.New("executor: invalid config"))

	// ErrUnknownInstance is the error an opcode ends with when its
	// dispatch carries no facts of its instance or of a node it names
	// (events.InstanceFacts: the planner service's inventory did not know
	// them, or the dispatch is older than the facts): without storage
	// kind and size there is nothing a driver can safely do.
	ErrUnknownInstance = errors.New("executor: instance or node unknown to the dispatch")
)

// classified wraps err under a class sentinel, keeping both reachable by
// errors.Is and errors.As.
type classified struct {
	class error
	err   error
}

func (c *classified) Error() string   { return c.class.Error() + ": " + c.err.Error() }
func (c *classified) Unwrap() []error { return []error{c.class, c.err} }

// Transient marks err as worth retrying. A nil err stays nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &classified{class: ErrTransient, err: err}
}

// Fatal marks err as final: the driver rolled back and no retry will help.
// A nil err stays nil.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	return &classified{class: ErrFatal, err: err}
}

// Fatalf is Fatal over fmt.Errorf.
func Fatalf(format string, args ...any) error { return Fatal(fmt.Errorf(format, args...)) }

// IsTransient reports whether err is worth retrying. An error a driver did
// not classify is not: retrying an unknown failure could repeat a harmful
// step, so unclassified errors count as fatal.
func IsTransient(err error) bool {
	return errors.Is(err, ErrTransient) && !errors.Is(err, ErrFatal) && !errors.Is(err, ErrCanceled)
}
