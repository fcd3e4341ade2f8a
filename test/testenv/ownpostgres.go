package testenv

import (
	"context"
	"os"
	"testing"

	"github.com/drovehq/drove/deploy/embedded"
)

// OwnPostgres starts a Postgres server of the test's own, apart from the
// shared one Postgres gives: one the test may stop or kill and start
// again. Port 0 and dir "" make a new one, on a free port in a new
// directory removed with the test; the port and dir of one made before
// start that same cluster again, through crash recovery if it was killed.
// It is stopped with the test.
func OwnPostgres(t testing.TB, port int, dir string) *embedded.PostgresServer {
	t.Helper()
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "drove-own-pg-"); err != nil {
			t.Fatal(err)
		}
		// The server may run as the postgres user: it must reach dir.
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	pg, err := embedded.StartPostgres(context.Background(), embedded.Postgres{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	return pg
}
