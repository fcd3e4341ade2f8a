package sim

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Config shapes the simulated world. Zero fields take the defaults listed.
type Config struct {
	// Bandwidth is the send rate between nodes, bytes per simulated
	// second. Default 200 MiB/s.
	Bandwidth int64
	// Links, when set, is the network all the nodes' drivers share: each
	// move runs at its share of its sending and its receiving node's
	// links (links.go), and Bandwidth is not used for moves.
	Links *Links
	// DirtyRate is how fast a running instance dirties disk and memory,
	// bytes per simulated second: what each re-sync has to send again.
	// Default 5 MiB/s.
	DirtyRate int64
	// DiskScale and MemoryScale are the bytes per declared MiB of disk and
	// memory. Default 1 MiB, so sizes are real; a demo scales them down to
	// make moves short.
	DiskScale   int64
	MemoryScale int64
	// Clock is simulated time. Default RealClock(); tests use FastClock or
	// InstantClock.
	Clock Clock
	// Step is the simulated time between two progress reports of a
	// transfer. Default 250ms.
	Step time.Duration
	// The re-sync rule (RFD 34): switch when the last incremental was below
	// SwitchBelow bytes (default 50 MiB), after MaxSyncs sync passes
	// (default 10), or when the incrementals stopped shrinking over the
	// last ShrinkWindow passes (default 3). Memory pre-copy rounds follow
	// the same rule.
	SwitchBelow  int64
	MaxSyncs     int
	ShrinkWindow int
	// ReplicationLag is how far a zfs-replicated replica trails its
	// primary: a migrate first sends DirtyRate × ReplicationLag. Default 10s.
	ReplicationLag time.Duration
	// StopTime and StartTime are how long stopping and starting an
	// instance take, in simulated time. Default 2s each.
	StopTime  time.Duration
	StartTime time.Duration
	// Faults are injected from the start; Driver.Inject adds more.
	Faults []Fault
}

// Fault kinds.
const (
	// FaultTransient fails an attempt mid-transfer; the next attempt
	// resumes the send where it broke off.
	FaultTransient = "transient"
	// FaultFatal fails the move and rolls it back: nothing moved.
	FaultFatal = "fatal"
)

// Fault makes moves of one instance fail.
type Fault struct {
	// Instance is the instance whose moves fail. Required.
	Instance string
	// Op limits the fault to one opcode kind: "migrate", "failover",
	// "replace-disks" (or its OP_INSTANCE_* id). Empty: any.
	Op string
	// Kind is FaultTransient or FaultFatal.
	Kind string
	// Times is how many attempts fail. Transient: the first Times attempts
	// (default 1). Fatal: 0 means every attempt.
	Times int
	// Phase is the RFD 34 phase the fault strikes in (begin, sync,
	// switch), halfway through its first transfer. Empty: the first phase
	// that has a checkpoint.
	Phase string
}

func (f Fault) check() []string {
	var ps []string
	if f.Instance == "" {
		ps = append(ps, "Instance: missing")
	}
	if f.Kind != FaultTransient && f.Kind != FaultFatal {
		ps = append(ps, fmt.Sprintf("Kind: %q (want %q or %q)", f.Kind, FaultTransient, FaultFatal))
	}
	if f.Times < 0 {
		ps = append(ps, fmt.Sprintf("Times: negative (%d)", f.Times))
	}
	switch f.Op {
	case "", "migrate", "failover", "replace-disks",
		"OP_INSTANCE_MIGRATE", "OP_INSTANCE_FAILOVER", "OP_INSTANCE_REPLACE_DISKS":
	default:
		ps = append(ps, fmt.Sprintf("Op: unknown %q", f.Op))
	}
	switch f.Phase {
	case "", "begin", "sync", "switch":
	default:
		ps = append(ps, fmt.Sprintf("Phase: unknown %q (want begin, sync or switch)", f.Phase))
	}
	return ps
}

func (c Config) withDefaults() Config {
	const mib = 1 << 20
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Bandwidth, 200*mib)
	def(&c.DirtyRate, 5*mib)
	def(&c.DiskScale, mib)
	def(&c.MemoryScale, mib)
	def(&c.SwitchBelow, 50*mib)
	if c.Clock == nil {
		c.Clock = RealClock()
	}
	if c.Step == 0 {
		c.Step = 250 * time.Millisecond
	}
	if c.MaxSyncs == 0 {
		c.MaxSyncs = 10
	}
	if c.ShrinkWindow == 0 {
		c.ShrinkWindow = 3
	}
	if c.ReplicationLag == 0 {
		c.ReplicationLag = 10 * time.Second
	}
	if c.StopTime == 0 {
		c.StopTime = 2 * time.Second
	}
	if c.StartTime == 0 {
		c.StartTime = 2 * time.Second
	}
	return c
}

// Validate reports every problem in c at once, after defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	var ps []string
	for _, v := range []struct {
		name string
		v    int64
	}{{"Bandwidth", c.Bandwidth}, {"DiskScale", c.DiskScale}, {"MemoryScale", c.MemoryScale},
		{"SwitchBelow", c.SwitchBelow}, {"Step", int64(c.Step)}, {"MaxSyncs", int64(c.MaxSyncs)},
		{"ShrinkWindow", int64(c.ShrinkWindow)}} {
		if v.v <= 0 {
			ps = append(ps, fmt.Sprintf("%s: %d (want positive)", v.name, v.v))
		}
	}
	for _, v := range []struct {
		name string
		v    int64
	}{{"DirtyRate", c.DirtyRate}, {"ReplicationLag", int64(c.ReplicationLag)},
		{"StopTime", int64(c.StopTime)}, {"StartTime", int64(c.StartTime)}} {
		if v.v < 0 {
			ps = append(ps, fmt.Sprintf("%s: negative (%d)", v.name, v.v))
		}
	}
	for i, f := range c.Faults {
		for _, p := range f.check() {
			ps = append(ps, fmt.Sprintf("Faults[%d].%s", i, p))
		}
	}
	if len(ps) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(ps, "; "))
	}
	return nil
}

// Clock is the simulator's time. Moves sleep on it between progress
// reports, so a faster clock makes the same simulated move shorter in wall
// time while rates and ETAs stay in simulated seconds.
type Clock interface {
	Now() time.Time
	// Sleep waits d of simulated time, or until ctx is done (then it
	// returns ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock is wall time.
func RealClock() Clock { return FastClock(1) }

// FastClock runs simulated time speedup times faster than wall time.
func FastClock(speedup float64) Clock {
	if speedup <= 0 {
		speedup = 1
	}
	return &fastClock{start: time.Now(), speedup: speedup}
}

type fastClock struct {
	start   time.Time
	speedup float64
}

func (c *fastClock) Now() time.Time {
	return c.start.Add(time.Duration(float64(time.Since(c.start)) * c.speedup))
}

func (c *fastClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(time.Duration(float64(d) / c.speedup))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// InstantClock never waits: Sleep only advances the clock. Moves finish as
// fast as the CPU allows, with the same reports as in real time.
func InstantClock() Clock { return &instantClock{now: time.Unix(0, 0).UTC()} }

type instantClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *instantClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *instantClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	runtime.Gosched() // let a canceller run, as real time would
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}
