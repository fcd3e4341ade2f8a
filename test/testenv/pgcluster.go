package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// tempPrefix names the per-process directories under os.TempDir that hold
// a cluster's data directory, socket and log.
const tempPrefix = "drove-testenv-pg-"

// postgresBinGlobs are searched, newest version first, when PATH has no
// initdb: Debian/Ubuntu, then RHEL/PGDG, then a source build.
var postgresBinGlobs = []string{
	"/usr/lib/postgresql/*/bin",
	"/usr/pgsql-*/bin",
	"/usr/local/pgsql/bin",
}

// pgBinaries are the two server programs a cluster needs, from one
// installation.
type pgBinaries struct {
	initdb, postgres string
}

// findPostgresBinaries looks for initdb in the directories of path, then in
// globs (highest version number first), and takes postgres from the same
// installation. The error wraps ErrNoPostgres and says how to fix it.
func findPostgresBinaries(path string, globs []string) (pgBinaries, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		if b, ok := binariesIn(dir); ok {
			return b, nil
		}
	}
	var dirs []string
	for _, g := range globs {
		m, _ := filepath.Glob(g) // the patterns are constant and valid
		dirs = append(dirs, m...)
	}
	slices.SortStableFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, dir := range dirs {
		if b, ok := binariesIn(dir); ok {
			return b, nil
		}
	}
	return pgBinaries{}, fmt.Errorf("%w: DATABASE_URL is not set, no Docker engine answers, "+
		"and no PostgreSQL server binaries (initdb and postgres) are in PATH or %s. "+
		"Install them with `apt-get install postgresql-15` (Debian/Ubuntu; they land in /usr/lib/postgresql/15/bin), "+
		"or set DATABASE_URL to a server whose role may create databases, "+
		"e.g. DATABASE_URL='postgres://postgres@localhost:5432/postgres?sslmode=disable'",
		ErrNoPostgres, strings.Join(globs, ", "))
}

// binariesIn reports whether dir has initdb, with postgres beside it or
// beside the file a symlinked initdb points to (as /usr/local/bin/initdb ->
// /usr/lib/postgresql/15/bin/initdb).
func binariesIn(dir string) (pgBinaries, bool) {
	initdb := filepath.Join(dir, "initdb")
	if !isExecutable(initdb) {
		return pgBinaries{}, false
	}
	if real, err := filepath.EvalSymlinks(initdb); err == nil {
		if pg := filepath.Join(filepath.Dir(real), "postgres"); isExecutable(pg) {
			return pgBinaries{initdb: real, postgres: pg}, true
		}
	}
	if pg := filepath.Join(dir, "postgres"); isExecutable(pg) {
		return pgBinaries{initdb: initdb, postgres: pg}, true
	}
	return pgBinaries{}, false
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

var digits = regexp.MustCompile(`[0-9]+`)

// versionOf is the major version an installation directory names: the
// first number in the component above bin ("/usr/lib/postgresql/15/bin"
// and "/usr/pgsql-15/bin" are 15), 0 if none.
func versionOf(dir string) int {
	if filepath.Base(dir) == "bin" {
		dir = filepath.Dir(dir)
	}
	n, _ := strconv.Atoi(digits.FindString(filepath.Base(dir)))
	return n
}

// clusterCredential is who initdb and postgres run as: the test process's
// own user, or, when that is root (which both programs refuse), the
// postgres OS user. nil means "do not switch".
func clusterCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("%w: the tests run as root, which initdb and postgres refuse, "+
			"and there is no 'postgres' OS user to run them as (%v); "+
			"create one with `useradd --system postgres` (apt-get install postgresql-15 does), "+
			"run the tests as another user, or set DATABASE_URL", ErrNoPostgres, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("postgres user: %w", err)
	}
	// Groups is empty on purpose: the child must not keep root's
	// supplementary groups.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// cluster is a running throwaway PostgreSQL.
type cluster struct {
	base   string // per-process temp dir: data/, the socket, postgres.log
	port   int
	cmd    *exec.Cmd
	exited chan struct{} // closed when the postmaster has exited
}

// startCluster makes a cluster in a new temp directory and starts it on a
// free port of 127.0.0.1, retrying on a new port when another process took
// the chosen one first.
func startCluster(ctx context.Context, bins pgBinaries) (*server, error) {
	sweepStale(os.TempDir())
	cred, err := clusterCredential()
	if err != nil {
		return nil, err
	}
	base, err := os.MkdirTemp("", tempPrefix)
	if err != nil {
		return nil, err
	}
	srv, err := initAndStart(ctx, bins, base, cred)
	if err != nil {
		_ = os.RemoveAll(base)
		return nil, err
	}
	return srv, nil
}

func initAndStart(ctx context.Context, bins pgBinaries, base string, cred *syscall.Credential) (*server, error) {
	if err := os.WriteFile(filepath.Join(base, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	if cred != nil {
		// The data directory must belong to the user postgres runs as;
		// initdb creates it inside base, so base must be theirs too.
		if err := os.Chown(base, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(base, "data")
	initdb := exec.CommandContext(ctx, bins.initdb,
		"-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Env = childEnv(base)
	initdb.SysProcAttr = sysProcAttr(cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s as %s: %v\n%s", bins.initdb, runAsName(cred), err, out)
	}

	var lastErr error
	for range 5 {
		c, err := runPostgres(bins, base, cred)
		if errors.Is(err, errPortInUse) {
			lastErr = err
			continue
		}
		if err != nil {
			return nil, err
		}
		dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
		admin, err := connectAdmin(ctx, dsn, c.exited)
		if err != nil {
			logTail := c.logTail()
			c.stop()
			if strings.Contains(logTail, "could not bind") || strings.Contains(logTail, "could not create any TCP/IP sockets") {
				lastErr = errPortInUse
				continue
			}
			return nil, fmt.Errorf("postgres on port %d: %v\n%s", c.port, err, logTail)
		}
		return &server{
			admin: admin,
			urlFor: func(db string) string {
				return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
			},
			describe: fmt.Sprintf("the local cluster in %s (port %d)", base, c.port),
			stop: func() error {
				err := c.stop()
				return errors.Join(err, os.RemoveAll(base))
			},
		}, nil
	}
	return nil, fmt.Errorf("postgres: no free port after 5 tries: %w", lastErr)
}

// runPostgres starts the postmaster in the background. It returns once the
// process runs; connectAdmin then waits until it accepts connections.
func runPostgres(bins pgBinaries, base string, cred *syscall.Credential) (*cluster, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(base, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child keeps its own descriptor

	// Not CommandContext: the server outlives the start; connectAdmin's
	// deadline bounds the wait instead.
	cmd := exec.Command(bins.postgres,
		"-D", filepath.Join(base, "data"),
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+base,
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB",
		"-c", "max_connections=200",
		"-c", "timezone=UTC",
	)
	cmd.Env = childEnv(base)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr(cred)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s as %s: %w", bins.postgres, runAsName(cred), err)
	}
	c := &cluster{base: base, port: port, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// stop asks for a fast shutdown (disconnect clients, exit) and kills the
// postmaster if it has not exited after a while.
func (c *cluster) stop() error {
	select {
	case <-c.exited:
		return nil
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.exited:
		return nil
	case <-time.After(15 * time.Second):
	}
	_ = c.cmd.Process.Kill()
	<-c.exited
	return fmt.Errorf("postgres in %s ignored fast shutdown for 15s and was killed", c.base)
}

// logTail is the end of the server's log, for failure messages.
func (c *cluster) logTail() string {
	b, _ := os.ReadFile(filepath.Join(c.base, "postgres.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// childEnv is the environment for initdb and postgres: ours without the
// PG* variables that could redirect them, a locale every system has, and a
// HOME the postgres user can read.
func childEnv(base string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PG") || strings.HasPrefix(k, "LC_") || k == "LANG" || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "HOME="+base)
}

func runAsName(cred *syscall.Credential) string {
	if cred == nil {
		return "the current user"
	}
	return fmt.Sprintf("uid %d", cred.Uid)
}

// freePort asks the kernel for an unused port on 127.0.0.1. Another process
// can take it before postgres binds it; initAndStart retries then.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// sweepStale removes cluster directories whose test process and
// postmaster are both gone: what a run killed before Main could clean up
// left behind.
func sweepStale(tmp string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, tempPrefix+"*"))
	for _, dir := range dirs {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			continue
		}
		owner := readPid(filepath.Join(dir, "owner.pid"))
		if owner == 0 && time.Since(fi.ModTime()) < 10*time.Minute {
			continue // another process may be creating it right now
		}
		if pidAlive(owner) ||
			pidAlive(readPid(filepath.Join(dir, "data", "postmaster.pid"))) {
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
