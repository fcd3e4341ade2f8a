package testenv

import (
	"github.com/drovehq/drove/deploy/embedded"

	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PG is one test's own PostgreSQL database. It exists from the call to
// [Postgres] until the test's cleanup drops it.
type PG struct {
	// URL is a pgx-compatible connection string for this test's database.
	URL string
	// Name is the database name (test_<random>).
	Name string

	t    testing.TB
	mu   sync.Mutex
	pool *pgxpool.Pool
}

// server is the one PostgreSQL server a test binary uses. Every test gets
// its own database on it.
type server struct {
	// admin is connected to the server's maintenance database; it runs
	// CREATE DATABASE and DROP DATABASE.
	admin *pgxpool.Pool
	// urlFor returns the connection string for database db.
	urlFor func(db string) string
	// describe says where the server came from, for failure messages.
	describe string
	// stop shuts the server down and removes what it left behind; nil
	// for a server testenv did not start.
	stop func() error
	// createSuffix ends every CREATE DATABASE: on PostgreSQL 15 and later
	// STRATEGY FILE_COPY, which with fsync off copies the small template
	// faster than the default of writing it all to the WAL.
	createSuffix string
}

var (
	serverMu   sync.Mutex
	serverOnce *sync.Once = new(sync.Once)
	theServer  *server
	serverErr  error
)

// startTimeout bounds how long starting the shared server may take,
// including initdb.
const startTimeout = 60 * time.Second

// externalTimeout bounds the wait for the DATABASE_URL server.
const externalTimeout = 15 * time.Second

// Postgres returns a fresh, empty database for t on the test binary's
// shared PostgreSQL server, starting that server on first use. The
// database is dropped when t ends.
//
// The server is, in order of preference: the one DATABASE_URL names (its
// role needs CREATEDB); a throwaway cluster started from the system's
// PostgreSQL binaries; a container when a Docker engine is reachable. A
// cluster or container testenv started is stopped by [Main]; call it from
// TestMain. Without Main the cluster still dies with the test process and
// its temporary directory is removed by the next run.
//
// Postgres fails t (it never skips) when no server can be had.
func Postgres(t testing.TB) *PG {
	t.Helper()
	srv, started, err := sharedServer()
	if err != nil {
		t.Fatalf("testenv.Postgres: %v", err)
	}
	if started > 0 {
		t.Logf("testenv: %s ready in %v", srv.describe, started.Round(time.Millisecond))
	}

	name := "test_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := srv.admin.Exec(ctx, "CREATE DATABASE "+name+srv.createSuffix); err != nil {
		t.Fatalf("testenv.Postgres: create database %s on %s: %v", name, srv.describe, err)
	}
	// The comment names the test, so a database left on a shared
	// DATABASE_URL server by a killed run can be traced back.
	// (COMMENT takes no parameters; standard_conforming_strings makes
	// doubling quotes enough.)
	comment := "'" + strings.ReplaceAll(t.Name(), "'", "''") + "'"
	_, _ = srv.admin.Exec(ctx, "COMMENT ON DATABASE "+name+" IS "+comment)

	p := &PG{URL: srv.urlFor(name), Name: name, t: t}
	t.Cleanup(func() {
		p.closePool()
		if err := dropDatabase(srv.admin, name); err != nil {
			t.Errorf("testenv.Postgres: drop database %s: %v", name, err)
		}
	})
	return p
}

// Pool returns a pgx pool connected to the test's database, the same one on
// every call. It is closed when the test ends, before the database is
// dropped. Pool fails the test if the database does not answer; call it
// from the test's goroutine.
func (p *PG) Pool(ctx context.Context) *pgxpool.Pool {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pool != nil {
		return p.pool
	}
	pool, err := pgxpool.New(ctx, p.URL)
	if err != nil {
		p.t.Fatalf("testenv: pool for %s: %v", p.Name, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		p.t.Fatalf("testenv: ping %s: %v", p.Name, err)
	}
	p.pool = pool
	return pool
}

func (p *PG) closePool() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pool != nil {
		p.pool.Close()
		p.pool = nil
	}
}

// dropDatabase drops name, disconnecting whatever a test left connected.
// WITH (FORCE) needs PostgreSQL 13; older DATABASE_URL servers get the
// terminate-then-drop fallback.
func dropDatabase(admin *pgxpool.Pool, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42601" { // syntax_error
		_, _ = admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name)
		_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name)
	}
	return err
}

// Main runs the tests and then stops the PostgreSQL server and the Kafka
// broker testenv started for this binary, if any. Use it as the whole TestMain of a package that
// calls [Postgres]:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if err := Shutdown(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Shutdown stops the shared PostgreSQL server and Kafka broker if testenv
// started them, removes the drove binary it built ([Drove]), and forgets
// them, so a later call starts new ones. [Main] calls it;
// a TestMain that needs more than Main can call it itself after m.Run.
func Shutdown() error {
	return errors.Join(stopPostgres(), stopBroker(), removeDrove())
}

func stopPostgres() error {
	serverMu.Lock()
	defer serverMu.Unlock()
	srv := theServer
	theServer, serverErr, serverOnce = nil, nil, new(sync.Once)
	if srv == nil {
		return nil
	}
	srv.admin.Close()
	if srv.stop == nil {
		return nil
	}
	return srv.stop()
}

// sharedServer starts the binary's server once; every later call returns
// the same server, or the same error. started is how long the start took,
// for the call that did it, and 0 for the others.
func sharedServer() (srv *server, started time.Duration, err error) {
	serverMu.Lock()
	defer serverMu.Unlock()
	serverOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		t0 := time.Now()
		theServer, serverErr = startServer(ctx)
		if serverErr == nil {
			if err := theServer.probe(ctx); err != nil {
				theServer.admin.Close()
				if theServer.stop != nil {
					_ = theServer.stop()
				}
				theServer, serverErr = nil, err
			}
		}
		started = time.Since(t0)
	})
	return theServer, started, serverErr
}

// probe learns what the server supports.
func (s *server) probe(ctx context.Context) error {
	var version int
	if err := s.admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return fmt.Errorf("%s: %w", s.describe, err)
	}
	if version >= 150000 {
		s.createSuffix = " STRATEGY FILE_COPY"
	}
	return nil
}

// startServer picks the server in the documented order.
func startServer(ctx context.Context) (*server, error) {
	if dsn := os.Getenv("DATABASE_URL"); dsn != "" {
		return externalServer(ctx, dsn)
	}
	_, binErr := embedded.FindBinaries()
	if binErr == nil {
		return startCluster(ctx)
	}
	if dockerReachable() {
		return startContainer(ctx)
	}
	return nil, binErr
}

// externalServer uses the server DATABASE_URL names; testenv never stops
// it, only creates and drops its test databases there.
func externalServer(ctx context.Context, dsn string) (*server, error) {
	// A server someone else runs should already be up; allow for one
	// that is still starting beside the tests, as in CI, but no more.
	ctx, cancel := context.WithTimeout(ctx, externalTimeout)
	defer cancel()
	admin, err := connectAdmin(ctx, dsn, nil)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	return &server{
		admin:    admin,
		urlFor:   func(db string) string { return withDatabase(dsn, db) },
		describe: "the DATABASE_URL server",
	}, nil
}

// connectAdmin opens a small pool on the maintenance database and waits
// until it answers, or until exited (if not nil) says the server died.
func connectAdmin(ctx context.Context, dsn string, exited <-chan struct{}) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 4
	admin, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, admin.Ping, exited); err != nil {
		admin.Close()
		return nil, err
	}
	return admin, nil
}

// waitReady polls ping with a short, growing backoff until it succeeds,
// ctx ends, or exited (if not nil) reports that the server process died.
func waitReady(ctx context.Context, ping func(context.Context) error, exited <-chan struct{}) error {
	backoff := 5 * time.Millisecond
	var lastErr error // the most telling failure: not a timeout if any
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := ping(pctx)
		cancel()
		if err == nil {
			return nil
		}
		if lastErr == nil || !errors.Is(err, context.DeadlineExceeded) {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server not ready: %w (last error: %v)", ctx.Err(), lastErr)
		case <-exited:
			return fmt.Errorf("server exited while starting (last error: %v)", lastErr)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// withDatabase returns dsn pointing at database db instead. It handles
// both URL and keyword/value forms; in the latter a later key wins.
func withDatabase(dsn, db string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err == nil {
			u.Path = "/" + db
			u.RawPath = ""
			return u.String()
		}
	}
	return dsn + " dbname=" + db
}

// randomHex returns 2n random lowercase hex digits.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails, per crypto/rand
	return hex.EncodeToString(b)
}
