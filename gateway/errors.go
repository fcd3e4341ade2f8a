package gateway

import (
	"errors"
	"net/http"

	"github.com/drovehq/drove/events/retry"
	"github.com/drovehq/drove/gateway/wire"
)

// Sentinel errors of the read side. Store methods translate pgx's errors
// into these where they enter, so handlers never look at a driver error.
var (
	// ErrNotFound is returned when the row asked for is not in the views:
	// an unknown id or name, or a request with no plan yet.
	ErrNotFound = errors.New("gateway: not found")

	// ErrInvalidConfig is returned by New when the Config does not
	// validate; the message lists every problem.
	ErrInvalidConfig = retry.Permanent(errors.New("gateway: invalid config"))

	// ErrBadBound is wrapped by Config.PointInTime's errors that are the
	// caller's: a time it cannot answer for (one in the future).
	ErrBadBound = errors.New("gateway: bad point in time")
)

// Handlers return a *wire.Error (an HTTP status and the body
// {"error": {"code", "message", "field"}}) instead of writing responses on
// every path, so a refused command can never slip through to the append.

// Error codes, stable for clients to branch on.
const (
	codeBadRequest  = "bad_request"    // malformed body or parameter
	codeNotFound    = "not_found"      // unknown id or name
	codeConflict    = "conflict"       // the request's state does not allow it
	codeActive      = "active_request" // an instance is held by an active request
	codeUnavailable = "unavailable"    // Postgres or Kafka did not answer
	codeInternal    = "internal"
	codeTooSlow     = "too_slow" // a watcher fell too far behind
	codeTooMany     = "too_many_watchers"
)

func badRequest(field, msg string) *wire.Error {
	return &wire.Error{Status: http.StatusBadRequest, Code: codeBadRequest, Message: msg, Field: field}
}

func notFound(field, msg string) *wire.Error {
	return &wire.Error{Status: http.StatusNotFound, Code: codeNotFound, Message: msg, Field: field}
}

func conflict(code, field, msg string) *wire.Error {
	return &wire.Error{Status: http.StatusConflict, Code: code, Message: msg, Field: field}
}
