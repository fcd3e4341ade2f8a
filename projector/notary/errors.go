package notary

import (
	"errors"

	"github.com/drovehq/drove/events/retry"
)

var (
	// ErrInvalidConfig is returned by Run when the Config does not
	// validate; the message lists every problem.
	ErrInvalidConfig = retry.Permanent(errors.New("notary: invalid config"))

	// ErrKey is returned when a key file cannot be used: unreadable, not
	// an ed25519 key in PEM, or readable by others than its owner.
	ErrKey = errors.New("notary: key file refused")
)
