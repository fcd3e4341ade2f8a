package testenv

import "github.com/drovehq/drove/deploy/embedded"

// ErrNoPostgres is returned (and reported through t.Fatal) when no
// PostgreSQL can be found: DATABASE_URL is unset, no server binaries are
// installed and no Docker engine answers. The message that wraps it says
// how to install them.
var ErrNoPostgres = embedded.ErrNoPostgres
