package drivertest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
)

// Locator is implemented by drivers that can say where an instance is;
// the suite then checks placements, not just return values.
type Locator interface {
	Locate(ctx context.Context, instance string) (primary, secondary string, err error)
}

// Instance is one instance of the fixture.
type Instance struct {
	Name      string
	Size      events.Size
	Storage   events.StorageKind
	RunState  events.RunState
	Primary   string
	Secondary string
}

// Nodes of the fixture.
const (
	Node1 = "dt-node1"
	Node2 = "dt-node2"
	Node3 = "dt-node3"
)

// Fixture is what a driver's world must hold when newDriver returns.
var Fixture = []Instance{
	{Name: "dt-replicated", Size: size(256, 64), Storage: events.StorageZFSReplicated,
		RunState: events.RunRunning, Primary: Node1, Secondary: Node2},
	{Name: "dt-replicated-stopped", Size: size(64, 64), Storage: events.StorageZFSReplicated,
		RunState: events.RunStopped, Primary: Node1, Secondary: Node2},
	{Name: "dt-local", Size: size(256, 64), Storage: events.StorageZFSLocal,
		RunState: events.RunRunning, Primary: Node1},
	{Name: "dt-shared", Size: size(128, 128), Storage: events.StorageRBD,
		RunState: events.RunRunning, Primary: Node1},
}

// FixtureFor is the part of Fixture on the storage kinds given, in
// Fixture's order: what a driver passed to RunFor must hold.
func FixtureFor(storage []events.StorageKind) []Instance {
	var ins []Instance
	for _, in := range Fixture {
		if slices.Contains(storage, in.Storage) {
			ins = append(ins, in)
		}
	}
	return ins
}

// fixtureStorage is every storage kind Fixture uses, in its order.
func fixtureStorage() []events.StorageKind {
	var ks []events.StorageKind
	for _, in := range Fixture {
		if !slices.Contains(ks, in.Storage) {
			ks = append(ks, in.Storage)
		}
	}
	return ks
}

func size(memMiB, diskMiB int64) events.Size {
	return events.Size{MemoryMiB: memMiB, VCPUs: 1, DisksMiB: []int64{diskMiB}}
}

func fixture(t *testing.T, name string) Instance {
	t.Helper()
	for _, in := range Fixture {
		if in.Name == name {
			return in
		}
	}
	t.Fatalf("drivertest: no fixture instance %q", name)
	return Instance{}
}

// OpFor builds the Op the executor would hand a driver for kind on in,
// from in's primary to to.
func OpFor(in Instance, kind events.OpID, to string) executor.Op {
	op := executor.Op{
		Request: "drivertest", Job: 0, Index: 0, Kind: kind,
		Instance: in.Name, Size: in.Size, Storage: in.Storage, RunState: in.RunState,
		From: in.Primary, To: to, Primary: in.Primary, Secondary: in.Secondary, Attempt: 1,
	}
	if kind == events.OpInstanceReplaceDisks {
		op.Mode = events.ModeReplaceNewSecondary
	}
	return op
}

// recorder collects a Run's reports; drivers may report from any goroutine.
type recorder struct {
	mu   sync.Mutex
	got  []executor.Progress
	hook func(executor.Progress)
}

func (r *recorder) report(p executor.Progress) {
	r.mu.Lock()
	r.got = append(r.got, p)
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(p)
	}
}

func (r *recorder) all() []executor.Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]executor.Progress(nil), r.got...)
}

// checkProgress asserts the progress contract of one finished Run.
func checkProgress(t *testing.T, ps []executor.Progress, finished bool) {
	t.Helper()
	if len(ps) == 0 {
		t.Fatalf("no progress reported")
	}
	for i, p := range ps {
		if p.Phase == "" {
			t.Errorf("report %d has no phase: %+v", i, p)
		}
		if p.Current < 0 || p.Total < 0 || p.Current > p.Total {
			t.Errorf("report %d: current %d of total %d", i, p.Current, p.Total)
		}
		if i > 0 && (p.Current < ps[i-1].Current || p.Total < ps[i-1].Total) {
			t.Errorf("report %d goes backwards: %d/%d after %d/%d", i, p.Current, p.Total, ps[i-1].Current, ps[i-1].Total)
		}
	}
	if last := ps[len(ps)-1]; finished && last.Current != last.Total {
		t.Errorf("last report %d/%d does not end at its total", last.Current, last.Total)
	}
}

func runCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func checkAt(t *testing.T, d executor.Driver, name, primary, secondary string) {
	t.Helper()
	l, ok := d.(Locator)
	if !ok {
		return
	}
	p, s, err := l.Locate(t.Context(), name)
	if err != nil {
		t.Fatalf("Locate(%s): %v", name, err)
	}
	if p != primary || s != secondary {
		t.Fatalf("%s is on %s/%s, want %s/%s", name, p, s, primary, secondary)
	}
}

// Run runs the whole suite, every storage kind of Fixture, against the
// drivers newDriver returns.
func Run(t *testing.T, newDriver func(t *testing.T) executor.Driver) {
	RunFor(t, fixtureStorage(), newDriver)
}

// RunFor runs the suite for a driver that handles only the storage kinds
// given: the cases whose instance has another kind are not generated (a
// driver rightly refuses storage it does not move, so they would only
// test the refusal), and newDriver's world need hold only FixtureFor(storage).
func RunFor(t *testing.T, storage []events.StorageKind, newDriver func(t *testing.T) executor.Driver) {
	handles := func(instance string) bool { return slices.Contains(storage, fixture(t, instance).Storage) }
	runMoves(t, handles, newDriver)
	if handles("dt-replicated") {
		t.Run("migrate-and-back", func(t *testing.T) { migrateAndBack(t, newDriver) })
	}
	runCancels(t, handles, newDriver)
	if handles("dt-replicated") {
		t.Run("cancel/before-start", func(t *testing.T) { cancelBeforeStart(t, newDriver) })
	}
}

// runMoves runs every move the driver handles to its end, then once more
// as after a crash: the second Run must succeed without moving again.
func runMoves(t *testing.T, handles func(instance string) bool, newDriver func(t *testing.T) executor.Driver) {
	moves := []struct {
		name, instance string
		kind           events.OpID
		to             string
		primary, sec   string // after
	}{
		{"migrate/mirrored", "dt-replicated", events.OpInstanceMigrate, Node2, Node2, Node1},
		{"migrate/mirrored-stopped", "dt-replicated-stopped", events.OpInstanceMigrate, Node2, Node2, Node1},
		{"migrate/copied", "dt-local", events.OpInstanceMigrate, Node3, Node3, ""},
		{"migrate/shared", "dt-shared", events.OpInstanceMigrate, Node3, Node3, ""},
		{"failover/mirrored", "dt-replicated", events.OpInstanceFailover, Node2, Node2, Node1},
		{"failover/shared", "dt-shared", events.OpInstanceFailover, Node2, Node2, ""},
		{"replace-disks", "dt-replicated", events.OpInstanceReplaceDisks, Node3, Node1, Node3},
	}
	for _, mv := range moves {
		if !handles(mv.instance) {
			continue
		}
		t.Run(mv.name, func(t *testing.T) {
			d := newDriver(t)
			in := fixture(t, mv.instance)
			op := OpFor(in, mv.kind, mv.to)
			var rec recorder
			if _, err := d.Run(runCtx(t), op, rec.report); err != nil {
				t.Fatalf("Run(%s): %v", op.Key(), err)
			}
			checkProgress(t, rec.all(), true)
			checkAt(t, d, in.Name, mv.primary, mv.sec)

			// A second Run, as after a crash before the end events were
			// written, must succeed without moving anything again.
			var again recorder
			op.Attempt = 1
			if _, err := d.Run(runCtx(t), op, again.report); err != nil {
				t.Fatalf("second Run of a finished opcode: %v", err)
			}
			checkProgress(t, again.all(), true)
			checkAt(t, d, in.Name, mv.primary, mv.sec)
		})
	}
}

// migrateAndBack moves a mirrored instance to its secondary and back.
func migrateAndBack(t *testing.T, newDriver func(t *testing.T) executor.Driver) {
	d := newDriver(t)
	in := fixture(t, "dt-replicated")
	if _, err := d.Run(runCtx(t), OpFor(in, events.OpInstanceMigrate, Node2), func(executor.Progress) {}); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	back := in
	back.Primary, back.Secondary = Node2, Node1
	var rec recorder
	if _, err := d.Run(runCtx(t), OpFor(back, events.OpInstanceMigrate, Node1), rec.report); err != nil {
		t.Fatalf("migrate back: %v", err)
	}
	checkProgress(t, rec.all(), true)
	checkAt(t, d, in.Name, Node1, Node2)
}

// runCancels aborts each move the driver handles once data flows: the
// instance stays where it was, and can be moved again.
func runCancels(t *testing.T, handles func(instance string) bool, newDriver func(t *testing.T) executor.Driver) {
	cancels := []struct {
		name, instance string
		kind           events.OpID
		to             string
	}{
		{"cancel/replace-disks", "dt-replicated", events.OpInstanceReplaceDisks, Node3},
		{"cancel/migrate-copied", "dt-local", events.OpInstanceMigrate, Node3},
		{"cancel/migrate-mirrored", "dt-replicated", events.OpInstanceMigrate, Node2},
	}
	for _, c := range cancels {
		if !handles(c.instance) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			d := newDriver(t)
			in := fixture(t, c.instance)
			op := OpFor(in, c.kind, c.to)
			ctx, cancel := context.WithCancel(runCtx(t))
			defer cancel()
			var rec recorder
			rec.hook = func(p executor.Progress) {
				if p.Current > 0 {
					cancel() // abort mid-move, once data is flowing
				}
			}
			_, err := d.Run(ctx, op, rec.report)
			if !errors.Is(err, executor.ErrCanceled) {
				t.Fatalf("Run with a cancelled context = %v, want ErrCanceled", err)
			}
			if executor.IsTransient(err) {
				t.Fatalf("a cancel must not look transient: %v", err)
			}
			checkProgress(t, rec.all(), false)
			checkAt(t, d, in.Name, in.Primary, in.Secondary)

			// Abort is not resumable but leaves the instance movable.
			if _, err := d.Run(runCtx(t), op, func(executor.Progress) {}); err != nil {
				t.Fatalf("Run after an abort: %v", err)
			}
		})
	}
}

// cancelBeforeStart runs a move with a context already done: it must
// abort with ErrCanceled before touching anything.
func cancelBeforeStart(t *testing.T, newDriver func(t *testing.T) executor.Driver) {
	d := newDriver(t)
	in := fixture(t, "dt-replicated")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := d.Run(ctx, OpFor(in, events.OpInstanceMigrate, Node2), func(executor.Progress) {})
	if !errors.Is(err, executor.ErrCanceled) {
		t.Fatalf("Run with a done context = %v, want ErrCanceled", err)
	}
	checkAt(t, d, in.Name, in.Primary, in.Secondary)
}
