package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
)

// containerImage is the server the Docker path runs: the same major
// version as the system binaries Drove's CI installs.
const containerImage = "postgres:15-alpine"

// dockerSocket is where a local Docker engine listens by default.
const dockerSocket = "/var/run/docker.sock"

// dockerReachable reports whether a Docker engine is likely to answer:
// DOCKER_HOST is set (testcontainers will use it), or the default socket
// answers a ping within a second.
func dockerReachable() bool {
	if os.Getenv("DOCKER_HOST") != "" {
		return true
	}
	if _, err := os.Stat(dockerSocket); err != nil {
		return false
	}
	client := &http.Client{
		Timeout: time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", dockerSocket)
			},
		},
	}
	resp, err := client.Get("http://docker/_ping")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// startContainer runs PostgreSQL in a container with the same settings as
// the local cluster. Main terminates it; without Main, testcontainers'
// reaper removes it when the test process exits.
func startContainer(ctx context.Context) (*server, error) {
	ctr, err := tcpostgres.Run(ctx, containerImage,
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		tcpostgres.BasicWaitStrategies(),
		testcontainers.WithCmdArgs(
			"-c", "fsync=off",
			"-c", "synchronous_commit=off",
			"-c", "full_page_writes=off",
			"-c", "shared_buffers=32MB",
			"-c", "max_connections=200",
			"-c", "timezone=UTC",
		),
	)
	if err != nil {
		if ctr != nil {
			_ = testcontainers.TerminateContainer(ctr)
		}
		return nil, fmt.Errorf("postgres container: %w", err)
	}
	dsn, err := ctr.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		_ = testcontainers.TerminateContainer(ctr)
		return nil, fmt.Errorf("postgres container: %w", err)
	}
	admin, err := connectAdmin(ctx, dsn, nil)
	if err != nil {
		_ = testcontainers.TerminateContainer(ctr)
		return nil, fmt.Errorf("postgres container: %w", err)
	}
	return &server{
		admin:    admin,
		urlFor:   func(db string) string { return withDatabase(dsn, db) },
		describe: "the " + containerImage + " container",
		stop:     func() error { return testcontainers.TerminateContainer(ctr) },
	}, nil
}
