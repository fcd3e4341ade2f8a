package sim

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
)

// Driver is the simulated executor.Driver. It keeps its own world — where
// each instance it has moved runs and where its replica is — so a second
// Run of an opcode that already happened finds the instance at the target
// and succeeds at once, as a real driver must.
type Driver struct {
	cfg Config

	mu     sync.Mutex
	faults []*fault
	world  map[string]*place  // instance → placement
	resume map[string]int64   // op key → bytes of the full send the target holds
	moving map[string]string  // instance → op key of the move under way
	runs   map[string]int     // instance → Run calls
	migs   map[string]*simMig // per-instance migrations, by id (migrate.go)
}

type place struct{ primary, secondary string }

type fault struct {
	Fault
	fired int
}

var _ executor.Driver = (*Driver)(nil)

// New returns a simulator with cfg's faults armed.
func New(cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	d := &Driver{cfg: cfg, world: map[string]*place{}, resume: map[string]int64{},
		moving: map[string]string{}, runs: map[string]int{}, migs: map[string]*simMig{}}
	for _, f := range cfg.Faults {
		d.faults = append(d.faults, &fault{Fault: f})
	}
	return d, nil
}

// Inject arms another fault, for tests that break a move while it runs.
func (d *Driver) Inject(f Fault) error {
	if ps := f.check(); len(ps) > 0 {
		return fmt.Errorf("%w: fault: %s", ErrInvalidConfig, strings.Join(ps, "; "))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults = append(d.faults, &fault{Fault: f})
	return nil
}

// Locate says where the simulator has instance: its primary and secondary.
func (d *Driver) Locate(_ context.Context, instance string) (primary, secondary string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.world[instance]
	if !ok {
		return "", "", fmt.Errorf("%w: %q", ErrUnknownInstance, instance)
	}
	return p.primary, p.secondary, nil
}

// Runs counts the Run calls made for instance, attempts included.
func (d *Driver) Runs(instance string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.runs[instance]
}

// Run simulates op; see executor.Driver for the contract and doc.go for
// the model.
func (d *Driver) Run(ctx context.Context, op executor.Op, report func(executor.Progress)) (executor.Result, error) {
	d.mu.Lock()
	d.runs[op.Instance]++
	if other, busy := d.moving[op.Instance]; busy {
		d.mu.Unlock()
		return executor.Result{}, executor.Fatal(fmt.Errorf("%w: %s by opcode %s", ErrBusy, op.Instance, other))
	}
	p, ok := d.world[op.Instance]
	if !ok {
		p = &place{primary: op.Primary, secondary: op.Secondary}
		if p.primary == "" {
			p.primary = op.From
		}
		d.world[op.Instance] = p
	}
	cur := *p
	d.moving[op.Instance] = op.Key()
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.moving, op.Instance)
		d.mu.Unlock()
	}()

	m := &move{d: d, ctx: ctx, op: op, report: report, checked: map[string]bool{}}
	if done, msg := m.alreadyThere(cur); done {
		m.total, m.cur = 1, 1
		m.emit(events.PhaseSwitch, 0, msg)
		return executor.Result{Message: msg}, nil
	}
	if cur.primary != op.From {
		return executor.Result{}, executor.Fatal(fmt.Errorf("%w: %s runs on %s, not %s",
			ErrNotThere, op.Instance, cur.primary, op.From))
	}
	if err := ctx.Err(); err != nil {
		return executor.Result{}, m.rollback(events.PhaseBegin, err)
	}
	var err error
	switch op.Kind {
	case events.OpInstanceReplaceDisks:
		err = m.replaceDisks(cur)
	case events.OpInstanceMigrate:
		err = m.migrate(cur)
	case events.OpInstanceFailover:
		err = m.failover(cur)
	default:
		err = executor.Fatalf("sim: unknown opcode %q", op.Kind)
	}
	if err != nil {
		return executor.Result{}, err
	}
	d.mu.Lock()
	*p = m.after(cur)
	delete(d.resume, op.Key())
	d.mu.Unlock()
	return m.result(), nil
}

// strike returns the injected fault that fails this attempt at phase, if
// any, and counts it.
func (d *Driver) strike(op executor.Op, phase string, first bool) *fault {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range d.faults {
		if f.Instance != op.Instance || (f.Op != "" && f.Op != op.ShortKind() && f.Op != string(op.Kind)) {
			continue
		}
		if f.Phase != phase && (f.Phase != "" || !first) {
			continue
		}
		limit := f.Times
		if f.Kind == FaultTransient && limit == 0 {
			limit = 1
		}
		if limit > 0 && f.fired >= limit {
			continue
		}
		f.fired++
		return f
	}
	return nil
}
