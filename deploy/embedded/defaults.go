package embedded

import "fmt"

// Where the embedded default listens unless told otherwise. The services'
// and client commands' own defaults are these, so every command in the
// README finds a running `make run` with no setting at all.
const (
	DefaultBrokerAddr   = "127.0.0.1:9092"
	DefaultPostgresPort = 15432
	DefaultDatabase     = "drove"
)

// DefaultDatabaseURL is the embedded default's database.
func DefaultDatabaseURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", DefaultPostgresPort, DefaultDatabase)
}
