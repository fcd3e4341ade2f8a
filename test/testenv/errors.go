package testenv

import "errors"

// ErrNoPostgres is returned (and reported through t.Fatal) when no
// PostgreSQL can be found: DATABASE_URL is unset, no server binaries are
// installed and no Docker engine answers. The message that wraps it says
// how to install them.
var ErrNoPostgres = errors.New("testenv: no PostgreSQL available")

// errPortInUse marks a cluster start that lost the race for its port to
// another process; the start is retried on a new port.
var errPortInUse = errors.New("testenv: port already in use")
