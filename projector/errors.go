package projector

import (
	"errors"

	"github.com/drovehq/drove/events/retry"
)

// Sentinel errors. Returned errors wrap one of these where a caller can act
// on the difference; Postgres and franz-go errors stay underneath.
var (
	// ErrInvalidConfig is returned by New, Replay and ApplySchema when the
	// configuration or schema name does not validate; the message lists
	// every problem.
	ErrInvalidConfig = retry.Permanent(errors.New("projector: invalid config"))

	// ErrSchemaOutdated is returned by Run and Replay when the schema
	// lacks the tables of this build's schema files: run ApplySchema
	// first. Folding into a schema of another version would write columns
	// that are not there.
	ErrSchemaOutdated = retry.Permanent(errors.New("projector: schema not at this build's version"))

	// ErrSchema is returned by ApplySchema when a schema file cannot be
	// read or applied; the schema keeps every file before it.
	ErrSchema = retry.Permanent(errors.New("projector: schema file failed"))
)
