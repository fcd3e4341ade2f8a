package zfs

import (
	"context"
	"sync"
	"time"

	"github.com/drovehq/drove/executor"
)

// Instance is what a Runtime is told about the instance it starts or
// stops: its name, this node, and where its disk lives.
type Instance struct {
	Name       string
	Node       string
	Dataset    string
	Mountpoint string
}

// Runtime runs instances on one node: a process, a QEMU VM (executor/qemu
// composes with this driver through it), or nothing (MemRuntime). The
// storage driver calls Stop before the final delta of a switch and Start
// on the target after it; both must be idempotent.
type Runtime interface {
	Start(ctx context.Context, in Instance) error
	Stop(ctx context.Context, in Instance) error
	Running(ctx context.Context, in Instance) (bool, error)
}

// LiveRuntime is a Runtime that hands a running instance over live
// (executor/qemu's ZFSRuntime): a per-instance migration's switch then
// pre-copies its memory to an incoming instance on the target while it
// runs, and sends the final delta while the guest is paused just before
// the switchover (migrate_live.go).
type LiveRuntime interface {
	Runtime
	// Incoming starts in on this node waiting for its memory, over its
	// dataset as received so far, and returns where it listens.
	Incoming(ctx context.Context, in Instance) (addr string, err error)
	// HandOver pre-copies in's memory to the incoming instance at addr on
	// node to, at rate() bytes per second (0: no cap). After the first
	// pass it calls catchUp, if not nil, holding the pre-copy short of
	// the switchover meanwhile (the storage sends what was written since
	// its last sync); then it lets the pre-copy converge until the guest
	// is paused before the switchover, calls atPause (the final delta and
	// its check) and completes the switchover. Nil means in runs on the
	// target and is gone here, with downtime how long its guest was
	// paused; an error before the target resumed leaves in running here
	// (catchUp's and atPause's errors included).
	HandOver(ctx context.Context, in Instance, to, addr string, rate func() int64,
		catchUp, atPause func(context.Context) error, report func(executor.Progress)) (downtime time.Duration, err error)
}

// WorkloadClocked is a Runtime whose instances' workloads keep a timeline
// of their own writes (executor/process's timeline.go, the QEMU test
// guest's): the downtime of a move as the workload saw it is read from
// the data on the target after the start there, and recorded beside the
// driver's own figure.
type WorkloadClocked interface {
	Runtime
	// WorkloadDowntime waits for the first write of in's workload since
	// its latest start on this node and returns the gap from the write
	// before it; an error when there is no figure.
	WorkloadDowntime(ctx context.Context, in Instance) (time.Duration, error)
}

// MemRuntime runs nothing: it remembers which instances are running, and
// calls the optional hooks, which tests use to start and stop a workload.
type MemRuntime struct {
	mu      sync.Mutex
	running map[string]bool
	// OnStart and OnStop, if set, are called on every Start and Stop.
	OnStart func(Instance)
	OnStop  func(Instance)
}

// NewMemRuntime returns a runtime with the given instances running.
func NewMemRuntime(running ...string) *MemRuntime {
	r := &MemRuntime{running: map[string]bool{}}
	for _, n := range running {
		r.running[n] = true
	}
	return r
}

// Start marks in running; OnStart runs only if it was not, as a real
// runtime's start of what already runs does nothing.
func (r *MemRuntime) Start(_ context.Context, in Instance) error {
	r.mu.Lock()
	was := r.running[in.Name]
	r.running[in.Name] = true
	hook := r.OnStart
	r.mu.Unlock()
	if hook != nil && !was {
		hook(in)
	}
	return nil
}

// Stop marks in stopped; OnStop runs only if it ran.
func (r *MemRuntime) Stop(_ context.Context, in Instance) error {
	r.mu.Lock()
	was := r.running[in.Name]
	r.running[in.Name] = false
	hook := r.OnStop
	r.mu.Unlock()
	if hook != nil && was {
		hook(in)
	}
	return nil
}

// Running says whether in is running.
func (r *MemRuntime) Running(_ context.Context, in Instance) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running[in.Name], nil
}

// IsRunning is Running without a context, for tests.
func (r *MemRuntime) IsRunning(name string) bool {
	ok, _ := r.Running(context.Background(), Instance{Name: name})
	return ok
}
