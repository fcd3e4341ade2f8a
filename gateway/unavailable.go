package gateway

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/drovehq/drove/gateway/wire"
)

// storeRetryAfter is the Retry-After, in seconds, of a 503 the views'
// store caused: about how long a Postgres restart takes.
const storeRetryAfter = "5"

// unavailable translates, where it enters, an error of the views' store
// that says Postgres cannot be reached now — the server is restarting,
// shutting down or not accepting connections, or the connection broke —
// into a 503 with Retry-After: the client's request was fine, and the
// same request will succeed once Postgres is back. Other errors pass
// through (a 500). Nothing was appended: reads and checks come before any
// append.
func unavailable(err error) *wire.Error {
	if !storeDown(err) {
		return nil
	}
	return &wire.Error{Status: http.StatusServiceUnavailable, Code: codeUnavailable,
		Message: "the views' database (Postgres) cannot be reached now; nothing was recorded, retry after a few seconds"}
}

// storeDown reports whether err says Postgres is unreachable rather than
// that a query was wrong.
func storeDown(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01-57P03: admin shutdown,
		// crash shutdown, cannot connect now (starting up).
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P")
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.As(err, &connErr), errors.As(err, &netErr), errors.As(err, &opErr),
		pgconn.SafeToRetry(err), pgconn.Timeout(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// pgx reports a connection closed under a query by message only.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool") ||
		strings.Contains(msg, "failed to connect")
}
