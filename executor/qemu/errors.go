package qemu

import (
	"errors"

	"github.com/drovehq/drove/events/retry"
)

// Sentinel errors. Run and Receive wrap them under executor.Transient or
// executor.Fatal, so both the class and the cause stay reachable.
var (
	// ErrQMP is a QMP exchange that went wrong: no socket, no greeting,
	// an undecodable line, a command that timed out.
	ErrQMP = errors.New("qemu: qmp")

	// ErrQMPClosed is a QMP connection that ended, almost always because
	// QEMU exited.
	ErrQMPClosed = errors.New("qemu: qmp connection closed")

	// ErrInvalidConfig is returned by New when the Config does not
	// validate; the message lists every problem.
	ErrInvalidConfig = retry.Permanent(errors.New("qemu: invalid config"))

	// ErrNotRunning is an instance with no VM on this node.
	ErrNotRunning = errors.New("qemu: instance not running here")

	// ErrAlreadyRunning is a Start of an instance whose VM already runs.
	ErrAlreadyRunning = errors.New("qemu: instance already running")

	// ErrExited is a VM whose QEMU process ended while it was needed.
	ErrExited = errors.New("qemu: qemu exited")

	// ErrMigrationFailed is a migration QEMU reported as failed or
	// cancelled in pre-copy: the source runs on, the target is destroyed.
	ErrMigrationFailed = errors.New("qemu: migration failed")

	// ErrNoProgress is a pre-copy that did not converge: the completion
	// timeout (per GiB of RAM) or the progress timeout expired and
	// post-copy was not allowed.
	ErrNoProgress = errors.New("qemu: migration did not converge")

	// ErrPostCopyFailed is a migration that failed after the switch to
	// post-copy: neither side holds the whole VM any more, so both are
	// down (oVirt: post-copy failure).
	ErrPostCopyFailed = errors.New("qemu: post-copy migration failed; the instance is down on both nodes")

	// ErrPostCopy is an abort of a migration in post-copy: the guest runs
	// on the target, the move can only finish.
	ErrPostCopy = errors.New("qemu: the migration is in post-copy and can no longer be aborted")

	// ErrUnsupported is an opcode this driver does not carry out.
	ErrUnsupported = errors.New("qemu: unsupported opcode")
)
