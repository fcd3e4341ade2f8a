package gateway

import (
	"errors"
	"net/http"
)

// Sentinel errors of the read side. Store methods translate pgx's errors
// into these where they enter, so handlers never look at a driver error.
var (
	// ErrNotFound is returned when the row asked for is not in the views:
	// an unknown id or name, or a request with no plan yet.
	ErrNotFound = errors.New("gateway: not found")

	// ErrInvalidConfig is returned by New when the Config does not
	// validate; the message lists every problem.
	ErrInvalidConfig = errors.New("gateway: invalid config")

	// ErrBadBound is wrapped by Config.PointInTime's errors that are the
	// caller's: a time it cannot answer for (one in the future).
	ErrBadBound = errors.New("gateway: bad point in time")
)

// apiError is an error answer: an HTTP status and the JSON body
// {"error": {"code", "message", "field"}}. Handlers return it instead of
// writing responses on every path, so a refused command can never slip
// through to the append.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// Instance and Request name what a conflict is about, when it is.
	Instance string `json:"instance,omitempty"`
	Request  string `json:"request,omitempty"`
	// Migration names the per-instance migration a conflict is about.
	Migration string `json:"migration,omitempty"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

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

func badRequest(field, msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: codeBadRequest, Message: msg, Field: field}
}

func notFound(field, msg string) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: codeNotFound, Message: msg, Field: field}
}

func conflict(code, field, msg string) *apiError {
	return &apiError{Status: http.StatusConflict, Code: code, Message: msg, Field: field}
}
