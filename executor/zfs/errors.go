package zfs

import (
	"errors"

	"github.com/drovehq/drove/events/retry"
)

var (
	// ErrInvalidConfig is returned by New when the Config does not
	// validate; the message lists every problem.
	ErrInvalidConfig = retry.Permanent(errors.New("zfs: invalid config"))

	// ErrCommand is a zfs command that failed; the message carries its
	// arguments and what it printed. Errors of go-zfs are translated into
	// it where they enter.
	ErrCommand = errors.New("zfs: command failed")

	// ErrNotFound is a dataset or snapshot that does not exist.
	ErrNotFound = errors.New("zfs: dataset not found")

	// ErrChecksum is a target whose content differs from the source's at
	// the switch point: the move fails and the source is kept.
	ErrChecksum = errors.New("zfs: checksum mismatch between source and target")

	// ErrUnsupported is an opcode or storage kind this driver does not
	// move (shared storage, an unknown opcode).
	ErrUnsupported = errors.New("zfs: unsupported")

	// ErrNoReceiver is a source that found no target side to send to
	// within Config.ReceiverWait.
	ErrNoReceiver = errors.New("zfs: no receiver on the target node")
)
