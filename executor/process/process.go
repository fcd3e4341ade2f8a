package process

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
)

// Config is what a Driver needs. Zero fields take the defaults listed
// with them; Validate reports every problem at once.
type Config struct {
	// Node is the node this driver runs processes on. Required.
	Node string
	// Dir holds pid files, logs and move markers. Required.
	Dir string
	// Command returns the command line of instance's process on this
	// node. Required.
	Command func(instance string) ([]string, error)
	// ListenHost is the address Receive listens on and announces.
	// Default 127.0.0.1.
	ListenHost string
	// StopTimeout is how long a process may take to exit after SIGTERM
	// before it is killed. Default 5s.
	StopTimeout time.Duration
	// Settle is how long a started process must stay alive to count as
	// up. Default 100ms.
	Settle time.Duration
	// HandoffTimeout bounds each step of the handoff between source and
	// target once the source has stopped its process. Default 30s.
	HandoffTimeout time.Duration
	// Logger gets the driver's logs. Default slog.Default().
	Logger *slog.Logger
}

// Validate reports every problem with cfg at once.
func (c Config) Validate() error {
	var ps []string
	if c.Node == "" {
		ps = append(ps, "node is required")
	}
	if c.Dir == "" {
		ps = append(ps, "dir is required")
	}
	if c.Command == nil {
		ps = append(ps, "command is required")
	}
	if c.StopTimeout < 0 || c.Settle < 0 || c.HandoffTimeout < 0 {
		ps = append(ps, "timeouts must not be negative")
	}
	if len(ps) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(ps, "; "))
}

func (c Config) withDefaults() Config {
	if c.ListenHost == "" {
		c.ListenHost = "127.0.0.1"
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = 5 * time.Second
	}
	if c.Settle == 0 {
		c.Settle = 100 * time.Millisecond
	}
	if c.HandoffTimeout == 0 {
		c.HandoffTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Driver runs instances as plain OS processes on one node and moves them
// by stopping on the source and starting on the target (Run and Receive,
// joined by the executor's receiver rendezvous).
type Driver struct {
	cfg Config
	log *slog.Logger

	mu    sync.Mutex
	procs map[string]*proc
}

type proc struct {
	pid    int
	exited chan struct{}
	// started is when this driver started it (zero for a process an
	// earlier driver left): its workload's first write comes after it.
	started time.Time
	// stopping is set by Stop and kill: an exit after it is asked for.
	stopping atomic.Bool
}

var (
	_ executor.Driver   = (*Driver)(nil)
	_ executor.Receiver = (*Driver)(nil)
)

// New validates cfg and returns the node's driver.
func New(cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("process: dir: %w", err)
	}
	return &Driver{cfg: cfg, log: cfg.Logger.With("driver", "process", "node", cfg.Node), procs: map[string]*proc{}}, nil
}

// State is what Status says of an instance on this node.
type State struct {
	Instance string
	Running  bool
	Pid      int
	// Status is up while the process runs, down otherwise.
	Status events.NodeMoveStatus
}

func (d *Driver) base(instance string) string {
	var b strings.Builder
	for _, r := range instance {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return filepath.Join(d.cfg.Dir, "_"+b.String())
}

// Start runs instance's process here. It fails when the process exits
// within Settle.
func (d *Driver) Start(ctx context.Context, instance string) error {
	return d.start(ctx, instance, "")
}

// start is Start with the instance's data directory (zfsruntime.go): the
// process's working directory and $DROVE_DATA; "" for none.
func (d *Driver) start(ctx context.Context, instance, data string) error {
	if p := d.lookup(instance); p != nil {
		return fmt.Errorf("%w: %s (pid %d)", ErrAlreadyRunning, instance, p.pid)
	}
	argv, err := d.cfg.Command(instance)
	if err != nil || len(argv) == 0 {
		return executor.Fatal(fmt.Errorf("process: command of %s: %v", instance, err))
	}
	base := d.base(instance)
	lf, err := os.OpenFile(base+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), "DROVE_INSTANCE="+instance, "DROVE_NODE="+d.cfg.Node)
	if data != "" {
		cmd.Dir, cmd.Env = data, append(cmd.Env, "DROVE_DATA="+data)
	}
	// Its own process group: it outlives the executor, and stopping it
	// stops its children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return executor.Fatal(fmt.Errorf("process: start %s: %w", instance, err))
	}
	p := &proc{pid: cmd.Process.Pid, exited: make(chan struct{}), started: started}
	go func() {
		err := cmd.Wait()
		close(p.exited)
		if !p.stopping.Load() {
			// Nobody asked it to end: say so, with how it ended, rather
			// than let a running instance vanish without a word.
			d.log.Warn("process exited unexpectedly", "instance", instance, "pid", p.pid, "status", cmd.ProcessState.String(), "err", err, "log", base+".log")
		}
	}()
	select {
	case <-p.exited:
		return executor.Fatal(fmt.Errorf("%w: %s exited within %s", ErrExited, instance, d.cfg.Settle))
	case <-time.After(d.cfg.Settle):
	case <-ctx.Done():
		d.kill(p)
		return fmt.Errorf("%w: start of %s: %v", executor.ErrCanceled, instance, ctx.Err())
	}
	os.WriteFile(base+".pid", []byte(strconv.Itoa(p.pid)+"\n"), 0o644)
	d.mu.Lock()
	d.procs[instance] = p
	d.mu.Unlock()
	d.log.Info("process started", "instance", instance, "pid", p.pid)
	return nil
}

// Stop ends instance's process here: SIGTERM to its group, SIGKILL after
// StopTimeout. It returns once every process of the group has ended, not
// only the first: a child may outlive it, in the middle of a write the
// storage driver's next snapshot must hold (issue 18: a workload's shell
// died at once while its dd still wrote, and the snapshot taken after
// Stop differed from what the dataset held when Stop returned). Stopping
// what does not run is not an error.
func (d *Driver) Stop(_ context.Context, instance string) error {
	p := d.lookup(instance)
	if p == nil {
		return nil
	}
	p.stopping.Store(true)
	syscall.Kill(-p.pid, syscall.SIGTERM)
	d.awaitGroup(p, d.cfg.StopTimeout)
	d.kill(p)
	d.mu.Lock()
	delete(d.procs, instance)
	d.mu.Unlock()
	os.Remove(d.base(instance) + ".pid")
	d.log.Info("process stopped", "instance", instance)
	return nil
}

// Status reports instance's process here.
func (d *Driver) Status(_ context.Context, instance string) (State, error) {
	if p := d.lookup(instance); p != nil {
		return State{Instance: instance, Running: true, Pid: p.pid, Status: events.StatusUp}, nil
	}
	return State{Instance: instance, Status: events.StatusDown}, nil
}

// Destroy kills every process this driver knows, for tests.
func (d *Driver) Destroy() {
	pids, _ := filepath.Glob(filepath.Join(d.cfg.Dir, "_*.pid"))
	for _, f := range pids {
		inst := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "_"), ".pid")
		if p := d.lookup(inst); p != nil {
			d.kill(p)
		}
		os.Remove(f)
	}
	d.mu.Lock()
	for _, p := range d.procs {
		d.kill(p)
	}
	d.procs = map[string]*proc{}
	d.mu.Unlock()
}

// kill ends p's whole group now and waits, up to StopTimeout, for every
// process of it to end.
func (d *Driver) kill(p *proc) {
	p.stopping.Store(true)
	syscall.Kill(-p.pid, syscall.SIGKILL)
	d.awaitGroup(p, d.cfg.StopTimeout)
}

// awaitGroup waits until p has exited and no process of its group runs
// any more (groupAlive), or for timeout. Nothing signals a group's end,
// so after the leader's it polls, briefly.
func (d *Driver) awaitGroup(p *proc, timeout time.Duration) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	select {
	case <-p.exited:
	case <-deadline.C:
		return
	}
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for groupAlive(p.pid) {
		select {
		case <-poll.C:
		case <-deadline.C:
			d.log.Warn("processes of the instance's group still run after the stop timeout", "pgid", p.pid, "timeout", timeout)
			return
		}
	}
}

// lookup finds instance's live process, from memory or from the pid
// file an earlier driver left.
func (d *Driver) lookup(instance string) *proc {
	d.mu.Lock()
	p := d.procs[instance]
	d.mu.Unlock()
	if p != nil {
		select {
		case <-p.exited:
			d.mu.Lock()
			delete(d.procs, instance)
			d.mu.Unlock()
		default:
			return p
		}
	}
	b, err := os.ReadFile(d.base(instance) + ".pid")
	if err != nil {
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
		return nil
	}
	p = &proc{pid: pid, exited: make(chan struct{})}
	go func() {
		for syscall.Kill(pid, 0) == nil {
			time.Sleep(50 * time.Millisecond)
		}
		close(p.exited)
	}()
	d.mu.Lock()
	d.procs[instance] = p
	d.mu.Unlock()
	return p
}
