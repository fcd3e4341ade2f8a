package projector

import "errors"

// Sentinel errors. Returned errors wrap one of these where a caller can act
// on the difference; Postgres and franz-go errors stay underneath.
var (
	// ErrInvalidConfig is returned by New, Replay and Migrate when the
	// configuration or schema name does not validate; the message lists
	// every problem.
	ErrInvalidConfig = errors.New("projector: invalid config")

	// ErrNotMigrated is returned by Run when the schema lacks the tables
	// of this build's migrations: run Migrate first. Folding into a schema
	// of another version would write columns that are not there.
	ErrNotMigrated = errors.New("projector: schema not migrated")

	// ErrMigration is returned by Migrate when a migration file cannot be
	// read or applied; the schema keeps every migration before it.
	ErrMigration = errors.New("projector: migration failed")
)
