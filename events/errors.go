package events

import (
	"errors"
	"fmt"
	"strings"
)

// The decoder's sentinel errors. Every error this package returns wraps
// exactly one of them, with details naming the offending field, so callers
// branch with errors.Is and operators read the message.
var (
	// ErrUnknownType is returned when an event's type is not in the
	// registry: it was written by a newer Drove, or by something that is not
	// Drove at all. Consumers must stop, not skip, or their views go wrong.
	ErrUnknownType = errors.New("events: unknown event type")

	// ErrUnsupportedVersion is returned when the type is known but not at
	// this schema version.
	ErrUnsupportedVersion = errors.New("events: unsupported event version")

	// ErrMalformed is returned when the bytes are not a well-formed event:
	// invalid JSON, an unknown field, a missing required field, a value of
	// the wrong kind, or an enum value outside its set.
	ErrMalformed = errors.New("events: malformed event")
)

// malformed builds an ErrMalformed naming the field at fault.
func malformed(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrMalformed, field, fmt.Sprintf(format, args...))
}

// problems collects field problems so one error reports all of them; fixing
// a hand-written event one complaint at a time is tedious.
type problems []string

func (p *problems) addf(field, format string, args ...any) {
	*p = append(*p, field+": "+fmt.Sprintf(format, args...))
}

func (p *problems) require(field, value string) {
	if value == "" {
		p.addf(field, "missing")
	}
}

func (p problems) err(where string) error {
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s: %s", ErrMalformed, where, strings.Join(p, "; "))
}

// ErrTypeMismatch is returned by As when the event holds another type than
// the one asked for: a routing mistake in the caller, not bad data.
var ErrTypeMismatch = errors.New("events: event is not of the requested type")
