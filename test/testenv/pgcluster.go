package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drovehq/drove/deploy/embedded"
)

// tempPrefix names the per-process directories under os.TempDir that hold
// a cluster's data directory, socket and log.
const tempPrefix = "drove-testenv-pg-"

// startCluster makes a throwaway cluster in a new temp directory with the
// embedded deployment's starter (the same code `make run` uses), on a free
// port of 127.0.0.1, retrying when another process took the port first.
func startCluster(ctx context.Context) (*server, error) {
	sweepStale(os.TempDir())
	var lastErr error
	for range 3 {
		base, err := os.MkdirTemp("", tempPrefix)
		if err != nil {
			return nil, err
		}
		// The server may run as the postgres user: it must reach base.
		if err := os.Chmod(base, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(base, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return nil, err
		}
		pg, err := embedded.StartPostgres(ctx, embedded.Postgres{Dir: base})
		if err != nil {
			_ = os.RemoveAll(base)
			lastErr = err
			if strings.Contains(err.Error(), "could not bind") || strings.Contains(err.Error(), "could not create any TCP/IP sockets") {
				continue
			}
			return nil, err
		}
		admin, err := connectAdmin(ctx, pg.URL("postgres"), pg.Exited())
		if err != nil {
			_ = pg.Stop()
			_ = os.RemoveAll(base)
			return nil, err
		}
		return &server{
			admin:    admin,
			urlFor:   pg.URL,
			describe: fmt.Sprintf("the local cluster in %s (port %d)", base, pg.Port),
			stop:     func() error { return errors.Join(pg.Stop(), os.RemoveAll(base)) },
		}, nil
	}
	return nil, fmt.Errorf("postgres: no free port after 3 tries: %w", lastErr)
}

// sweepStale removes cluster directories whose test process and
// postmaster are both gone: what a run killed before Main could clean up
// left behind.
func sweepStale(tmp string) {
	sweepDirs(tmp, tempPrefix, func(dir string) bool {
		return pidAlive(readPid(filepath.Join(dir, "data", "postmaster.pid")))
	})
}

// sweepDirs removes the directories named prefix* in tmp whose owner
// (owner.pid) is gone and of which running says nothing still runs.
func sweepDirs(tmp, prefix string, running func(dir string) bool) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, prefix+"*"))
	for _, dir := range dirs {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			continue
		}
		owner := readPid(filepath.Join(dir, "owner.pid"))
		if owner == 0 && time.Since(fi.ModTime()) < 10*time.Minute {
			continue // another process may be creating it right now
		}
		if pidAlive(owner) || running(dir) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// readPid reads the number on the first line of file, 0 if there is none.
func readPid(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	n, _ := strconv.Atoi(strings.TrimSpace(line))
	return n
}

// pidAlive reports whether process pid exists and is not a zombie (a
// container whose init does not reap leaves killed test binaries as
// zombies, which still answer kill -0).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: trust kill -0
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain them: "pid (comm) S ...".
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
