package projector_test

import (
	"errors"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	. "github.com/drovehq/drove/projector"
)

// TestAsOfStopsAtTheBound folds the log up to a time and up to offsets:
// each schema holds the views as the log stood then, is kept and listed,
// is reused when asked again, and is dropped on request.
func TestAsOfStopsAtTheBound(t *testing.T) {
	e := newEnv(t)
	placed := func(node string, at int) events.Envelope {
		return ev(events.InstancePlaced{Instance: "vm1", Group: "g1", PrimaryNode: node, PreviousGroup: "g1", PreviousPrimary: "n1"}, at, "req-1")
	}
	// The producer stamps each record with its event's time.
	t1, t2 := time.Date(2025, 1, 1, 0, 0, 5, 0, time.UTC), time.Date(2025, 1, 1, 0, 0, 15, 0, time.UTC)
	e.append(ev(events.InstanceDeclared{Name: "vm1", Owner: "acct", Size: events.Size{MemoryMiB: 1, VCPUs: 1},
		Storage: events.StoragePlain, RunState: events.RunRunning, PrimaryNode: "n1"}, 0, ""))
	e.append(placed("n2", 10))
	e.append(placed("n3", 20))
	e.run()

	where := func(schema string) string {
		var node string
		if err := Get(e.ctx, e.pool, schema, `SELECT primary_node FROM instances WHERE name = 'vm1'`, &node); err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		return node
	}
	v1, err := AsOf(e.ctx, e.cfg, e.pool, Bound{At: t1})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := AsOf(e.ctx, e.cfg, e.pool, Bound{At: t2})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "placements at t1, t2, now", []any{where(v1.Name), where(v2.Name), where("drove")}, []any{"n1", "n2", "n3"})
	check(t, "events folded", []any{v1.Events, v2.Events, v1.Built}, []any{int64(1), int64(2), true})

	again, err := AsOf(e.ctx, e.cfg, e.pool, Bound{At: t2})
	if err != nil || again.Built || again.Name != v2.Name {
		t.Fatalf("AsOf again = %+v, %v; want the kept schema %s", again, err, v2.Name)
	}
	// The offsets t2's fold stopped at give the same views.
	byPos, err := AsOf(e.ctx, e.cfg, e.pool, Bound{Offsets: v2.Folded})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "placement at t2's offsets", where(byPos.Name), "n2")

	list, err := ListAsOf(e.ctx, e.cfg, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "listed", len(list), 3)
	if err := DropAsOf(e.ctx, e.cfg, e.pool, v1.Name); err != nil {
		t.Fatal(err)
	}
	if err := DropAsOf(e.ctx, e.cfg, e.pool, "drove"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("DropAsOf(live schema) = %v, want refused", err)
	}
	if list, _ = ListAsOf(e.ctx, e.cfg, e.pool); len(list) != 2 {
		t.Errorf("after drop, %d listed, want 2", len(list))
	}
	if _, err := AsOf(e.ctx, e.cfg, e.pool, Bound{At: time.Now().Add(time.Hour)}); !errors.Is(err, ErrBound) {
		t.Errorf("AsOf(future) = %v, want ErrBound", err)
	}
}
