package embedded

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

	"github.com/jackc/pgx/v5"
)

// ErrNoPostgres means no PostgreSQL server binaries could be found or run.
var ErrNoPostgres = errors.New("no PostgreSQL server available")

// postgresBinGlobs are searched, newest version first, when PATH has no
// initdb: Debian/Ubuntu, then RHEL/PGDG, then a source build.
var postgresBinGlobs = []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/usr/local/pgsql/bin"}

// Binaries are the two server programs a cluster needs, from one
// installation.
type Binaries struct {
	Initdb, Postgres string
}

// FindBinaries looks for initdb in PATH, then in the usual installation
// directories (highest version first), and takes postgres from the same
// installation. The error wraps ErrNoPostgres and says how to fix it.
func FindBinaries() (Binaries, error) {
	return findBinaries(os.Getenv("PATH"), postgresBinGlobs)
}

func findBinaries(path string, globs []string) (Binaries, error) {
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
		m, _ := filepath.Glob(g) // constant, valid patterns
		dirs = append(dirs, m...)
	}
	slices.SortStableFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, dir := range dirs {
		if b, ok := binariesIn(dir); ok {
			return b, nil
		}
	}
	return Binaries{}, fmt.Errorf("%w: no PostgreSQL server binaries (initdb and postgres) in PATH or %s; "+
		"install them with `apt-get install postgresql-15`, or point Drove at a server with DATABASE_URL",
		ErrNoPostgres, strings.Join(globs, ", "))
}

// binariesIn reports whether dir has initdb, with postgres beside it or
// beside the file a symlinked initdb points to.
func binariesIn(dir string) (Binaries, bool) {
	initdb := filepath.Join(dir, "initdb")
	if !isExecutable(initdb) {
		return Binaries{}, false
	}
	if real, err := filepath.EvalSymlinks(initdb); err == nil {
		if pg := filepath.Join(filepath.Dir(real), "postgres"); isExecutable(pg) {
			return Binaries{Initdb: real, Postgres: pg}, true
		}
	}
	if pg := filepath.Join(dir, "postgres"); isExecutable(pg) {
		return Binaries{Initdb: initdb, Postgres: pg}, true
	}
	return Binaries{}, false
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

var digits = regexp.MustCompile(`[0-9]+`)

func versionOf(dir string) int {
	if filepath.Base(dir) == "bin" {
		dir = filepath.Dir(dir)
	}
	n, _ := strconv.Atoi(digits.FindString(filepath.Base(dir)))
	return n
}

// Credential is who initdb and postgres run as: this process's user, or,
// when that is root (which both programs refuse), the postgres OS user.
// nil means "do not switch".
func Credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("%w: running as root, which initdb and postgres refuse, and there is no "+
			"'postgres' OS user to run them as (%v); `apt-get install postgresql-15` creates one", ErrNoPostgres, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("postgres user: %w", err)
	}
	// No supplementary groups: the server must not keep root's.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// ChildEnv is the environment for initdb and postgres: ours without the
// PG* and locale variables that could redirect them, a locale every system
// has, and a HOME the server's user can read.
func ChildEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PG") || strings.HasPrefix(k, "LC_") || k == "LANG" || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "HOME="+home)
}

// Postgres describes a PostgreSQL cluster kept in a directory: created on
// first start, reused after (Drove's state survives restarts of `make run`).
type Postgres struct {
	Dir  string // holds data/, the socket and postgres.log
	Port int    // on 127.0.0.1; 0 picks a free one
	// Durable keeps fsync on. The embedded default turns it off: it is a
	// development system and a lost write there costs nothing.
	Durable bool
}

// PostgresServer is a running cluster.
type PostgresServer struct {
	Dir string // as configured; holds postgres.log
	// DataDir is the cluster's data directory: Dir/data, or a directory
	// under StateRoot when the server's user cannot reach Dir.
	DataDir string
	Port    int
	cmd     *exec.Cmd
	exited  chan struct{}
}

// URL is a connection string for database db.
func (s *PostgresServer) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// Exited is closed when the server process has exited.
func (s *PostgresServer) Exited() <-chan struct{} { return s.exited }

// StartPostgres initialises the cluster if its directory has none, starts
// it and waits until it accepts connections.
func StartPostgres(ctx context.Context, cfg Postgres) (*PostgresServer, error) {
	bins, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := Credential()
	if err != nil {
		return nil, err
	}
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	home, err := serverDir(cfg.Dir, cred)
	if err != nil {
		return nil, err
	}
	if home == cfg.Dir && cred != nil {
		// initdb creates data/ inside Dir, so Dir must be the server user's.
		if err := os.Chown(cfg.Dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(home, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		initdb := exec.CommandContext(ctx, bins.Initdb, "-D", data, "-U", "postgres", "-A", "trust",
			"-E", "UTF8", "--locale=C", "--no-sync")
		initdb.Env = ChildEnv(home)
		initdb.SysProcAttr = procAttr(cred)
		if out, err := initdb.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initdb: %v\n%s", err, out)
		}
	}
	if home != cfg.Dir {
		if err := linkData(cfg.Dir, home); err != nil {
			return nil, err
		}
	}
	port := cfg.Port
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	logf, err := os.OpenFile(filepath.Join(cfg.Dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child keeps its own descriptor
	args := []string{"-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + home,
		"-c", "shared_buffers=64MB", "-c", "max_connections=200", "-c", "timezone=UTC"}
	if !cfg.Durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	cmd := exec.Command(bins.Postgres, args...)
	cmd.Env = ChildEnv(home)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = procAttr(cred)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s := &PostgresServer{Dir: cfg.Dir, DataDir: data, Port: port, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("postgres on port %d: %v\n%s", port, err, s.logTail())
	}
	return s, nil
}

func (s *PostgresServer) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	backoff := 10 * time.Millisecond
	for {
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-s.exited:
			return errors.New("the server exited while starting")
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 250*time.Millisecond)
	}
}

// EnsureDatabase creates database name if it does not exist.
func (s *PostgresServer) EnsureDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}

// Kill ends the server as a crash would: SIGKILL to the postmaster and
// every backend, so that the next start runs crash recovery. It returns
// once they are all gone: a backend left holding the shared memory would
// make the next start refused.
func (s *PostgresServer) Kill() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	// Each backend leads a session of its own (Postgres calls setsid in
	// every child), so a signal to the postmaster's group misses them, and
	// a backend outliving the postmaster keeps the shared memory in use: a
	// server started on the data then refuses to start (test/chaos saw
	// it). So the postmaster is stopped first (it forks no backend more),
	// its children are killed, then it.
	pid := s.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	kids := childrenOf(pid)
	for _, k := range kids {
		_ = syscall.Kill(k, syscall.SIGKILL)
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill postgres in %s: %w", s.Dir, err)
	}
	<-s.exited
	if err := awaitGone(kids, 30*time.Second); err != nil {
		return fmt.Errorf("kill postgres in %s: %w", s.Dir, err)
	}
	return nil
}

// procStat is what /proc/PID/stat says of a process that matters here.
type procStat struct {
	pid, ppid int
	zombie    bool // exited, not yet reaped: it holds no memory
}

// readProc reads /proc/PID/stat; false when the process is gone.
func readProc(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses, so
	// the fields are read after its last ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return procStat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return procStat{pid: pid, ppid: ppid, zombie: f[0] == "Z" || f[0] == "X"}, true
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	dirs, _ := os.ReadDir("/proc")
	var out []int
	for _, d := range dirs {
		n, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(n); ok && p.ppid == pid {
			out = append(out, n)
		}
	}
	return out
}

// awaitGone waits until none of pids is alive (a zombie counts as gone).
func awaitGone(pids []int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		left := 0
		for _, pid := range pids {
			if p, ok := readProc(pid); ok && !p.zombie {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of its processes still alive %s after SIGKILL", left, within)
		}
		time.Sleep(20 * time.Millisecond) // polling /proc under the deadline
	}
}

// Stop asks for a fast shutdown and kills the server if it has not exited
// after a while.
func (s *PostgresServer) Stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
		return nil
	case <-time.After(15 * time.Second):
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	return fmt.Errorf("postgres in %s ignored fast shutdown for 15s and was killed", s.Dir)
}

func (s *PostgresServer) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "postgres.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// FreePort asks the kernel for an unused port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	setParentDeathSignal(a)
	return a
}
