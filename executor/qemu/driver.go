package qemu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
)

// Driver is the QEMU runtime of one node: it starts, stops and reports
// the node's instance VMs, and moves them live to another node's Driver
// (Run on the source, Receive on the target).
type Driver struct {
	cfg Config
	log *slog.Logger
	m   *metrics

	mu  sync.Mutex
	vms map[string]*vm // instance → its VM on this node
}

var (
	_ executor.Driver   = (*Driver)(nil)
	_ executor.Receiver = (*Driver)(nil)
)

// New validates cfg and returns the node's driver. VMs left running by an
// earlier driver in the same Dir are found again when first needed.
func New(cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("qemu: dir: %w", err)
	}
	reg := cfg.Metrics
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Driver{cfg: cfg, log: cfg.Logger.With("driver", "qemu", "node", cfg.Node), m: m, vms: map[string]*vm{}}, nil
}

// State is what Status says of an instance on this node.
type State struct {
	Instance string
	// Running is true while a QEMU process exists for the instance.
	Running bool
	// RunState is QEMU's own (query-status): running, paused, inmigrate,
	// postmigrate, finish-migrate, ...; empty when not Running.
	RunState string
	// Status is the instance's status in oVirt's terms on this node:
	// up (running), paused, migration destination (an incoming VM) or
	// down (no VM, or one that has handed over).
	Status events.NodeMoveStatus
	Pid    int
}

// Start boots instance's VM on this node with its disk from Config.Disk.
func (d *Driver) Start(ctx context.Context, instance string, size events.Size) error {
	if v, err := d.lookup(ctx, instance); err == nil && v.alive() {
		return fmt.Errorf("%w: %s", ErrAlreadyRunning, instance)
	}
	spec, err := d.spec(instance, size, false)
	if err != nil {
		return err
	}
	return d.StartSpec(ctx, spec)
}

// StartSpec boots a VM as spec says, for callers that know the disk path
// themselves (ZFSRuntime). spec.Incoming must be false.
func (d *Driver) StartSpec(ctx context.Context, spec Spec) error {
	instance := spec.Instance
	if spec.Incoming {
		return fmt.Errorf("%w: StartSpec of an incoming VM", ErrUnsupported)
	}
	if v, err := d.lookup(ctx, instance); err == nil && v.alive() {
		return fmt.Errorf("%w: %s", ErrAlreadyRunning, instance)
	}
	if spec.MemoryMiB <= 0 {
		spec.MemoryMiB = d.cfg.DefaultMemoryMiB
	}
	v, err := d.startVM(ctx, spec)
	if err != nil {
		return executor.Transient(err)
	}
	d.put(instance, v)
	d.m.vms.Inc()
	d.log.Info("vm started", "instance", instance, "pid", v.proc.Pid, "memory_mib", spec.MemoryMiB)
	return nil
}

// Stop shuts instance's VM down on this node (QMP quit; killed after
// StopTimeout). Stopping a VM that does not run is not an error.
func (d *Driver) Stop(ctx context.Context, instance string) error {
	v, err := d.lookup(ctx, instance)
	if err != nil {
		return nil
	}
	d.drop(instance, v)
	v.quit(d.cfg.StopTimeout)
	d.log.Info("vm stopped", "instance", instance)
	return nil
}

// Status reports instance's VM on this node.
func (d *Driver) Status(ctx context.Context, instance string) (State, error) {
	st := State{Instance: instance, Status: events.StatusDown}
	v, err := d.lookup(ctx, instance)
	if err != nil {
		return st, nil
	}
	st.Running, st.Pid = true, v.proc.Pid
	rs, err := v.runState(ctx)
	if err != nil {
		// A QMP connection that closed is a QEMU on its way out (an
		// incoming VM whose migration failed exits by itself).
		if !v.alive() || errors.Is(err, ErrQMPClosed) {
			return State{Instance: instance, Status: events.StatusDown}, nil
		}
		return st, err
	}
	st.RunState = rs
	switch rs {
	case "running":
		st.Status = events.StatusUp
	case "inmigrate":
		st.Status = events.StatusMigrationDestination
	case "postmigrate", "finish-migrate", "shutdown", "internal-error", "guest-panicked":
		st.Status = events.StatusDown
	default:
		st.Status = events.StatusPaused
	}
	return st, nil
}

// Instances lists the instances with a VM on this node, sorted.
func (d *Driver) Instances() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for name, v := range d.vms {
		if v.alive() {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Close ends the QMP connections; the VMs keep running (a restarted
// driver attaches to them again).
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, v := range d.vms {
		v.qmp.Close()
	}
	d.vms = map[string]*vm{}
	return nil
}

// Destroy kills every VM of this node at once, for tests and for a node
// being wiped.
func (d *Driver) Destroy() {
	d.mu.Lock()
	vms := d.vms
	d.vms = map[string]*vm{}
	d.mu.Unlock()
	for _, v := range vms {
		v.kill()
	}
	// VMs of an earlier driver in the same Dir.
	pids, _ := filepath.Glob(filepath.Join(d.cfg.Dir, "*.pid"))
	for _, p := range pids {
		inst := strings.TrimSuffix(filepath.Base(p), ".pid")
		if v := d.attach(context.Background(), inst); v != nil {
			v.kill()
		}
	}
}

// lookup finds instance's live VM, attaching to one an earlier driver
// left, or fails with ErrNotRunning.
func (d *Driver) lookup(ctx context.Context, instance string) (*vm, error) {
	d.mu.Lock()
	v := d.vms[instance]
	d.mu.Unlock()
	if v != nil && v.alive() {
		return v, nil
	}
	if v != nil {
		d.drop(instance, v)
	}
	if v = d.attach(ctx, instance); v != nil {
		d.put(instance, v)
		return v, nil
	}
	return nil, fmt.Errorf("%w: %s on %s", ErrNotRunning, instance, d.cfg.Node)
}

func (d *Driver) put(instance string, v *vm) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.vms[instance] = v
}

func (d *Driver) drop(instance string, v *vm) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.vms[instance] == v {
		delete(d.vms, instance)
		d.m.vms.Dec()
	}
}

func (d *Driver) spec(instance string, size events.Size, incoming bool) (Spec, error) {
	s := Spec{Instance: instance, MemoryMiB: size.MemoryMiB, VCPUs: size.VCPUs, Incoming: incoming}
	if s.MemoryMiB <= 0 {
		s.MemoryMiB = d.cfg.DefaultMemoryMiB
	}
	if d.cfg.Disk != nil {
		p, err := d.cfg.Disk(instance)
		if err != nil {
			return Spec{}, executor.Fatal(fmt.Errorf("qemu: disk of %s: %w", instance, err))
		}
		s.Disk = p
	}
	return s, nil
}

// markMoved records that op moved instance away from this node, so a
// second Run of the same opcode (after a crash) succeeds at once instead
// of failing to find the VM.
func (d *Driver) markMoved(op executor.Op) {
	p := filepath.Join(d.cfg.Dir, fileName(op.Instance)+".moved")
	if err := os.WriteFile(p, []byte(op.Key()+"\n"), 0o644); err != nil {
		d.log.Warn("move marker not written", "instance", op.Instance, "err", err)
	}
}

func (d *Driver) movedBy(op executor.Op) bool {
	b, err := os.ReadFile(filepath.Join(d.cfg.Dir, fileName(op.Instance)+".moved"))
	return err == nil && strings.TrimSpace(string(b)) == op.Key()
}

func (d *Driver) clearMoved(instance string) {
	os.Remove(filepath.Join(d.cfg.Dir, fileName(instance)+".moved"))
}

// HMP runs a human monitor command on instance's VM and returns its
// output, for operators and tests (e.g. "info status", "xp /1wx 0x100000").
func (d *Driver) HMP(ctx context.Context, instance, command string) (string, error) {
	v, err := d.lookup(ctx, instance)
	if err != nil {
		return "", err
	}
	var out string
	err = v.qmp.Execute(ctx, "human-monitor-command", map[string]any{"command-line": command}, &out)
	return out, err
}
