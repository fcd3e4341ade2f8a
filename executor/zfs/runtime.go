package zfs

import (
	"context"
	"sync"
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

// Start marks in running.
func (r *MemRuntime) Start(_ context.Context, in Instance) error {
	r.mu.Lock()
	r.running[in.Name] = true
	hook := r.OnStart
	r.mu.Unlock()
	if hook != nil {
		hook(in)
	}
	return nil
}

// Stop marks in stopped.
func (r *MemRuntime) Stop(_ context.Context, in Instance) error {
	r.mu.Lock()
	r.running[in.Name] = false
	hook := r.OnStop
	r.mu.Unlock()
	if hook != nil {
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
