package executor

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
)

type sink struct {
	mu  sync.Mutex
	got []events.Progress
}

func (s *sink) send(p events.Progress) {
	s.mu.Lock()
	s.got = append(s.got, p)
	s.mu.Unlock()
}

func TestPumpIsMonotonicAndRateLimited(t *testing.T) {
	var s sink
	p := newPump(events.Progress{Request: "r", Instance: "vm1", Node: "n1"}, time.Hour, s.send)
	p.report(Progress{Phase: events.PhaseSync, Current: 10, Total: 100})
	// Within the interval: only the latest of these survives.
	p.report(Progress{Phase: events.PhaseSync, Current: 40, Total: 100})
	p.report(Progress{Phase: events.PhaseSync, Current: 60, Total: 100})
	p.notice("retrying (attempt 2/5) after transient fault: boom", "boom")
	// The retry resends from 30: Current must not go back to 30.
	p.report(Progress{Phase: events.PhaseSync, Current: 30, Total: 100})
	p.report(Progress{Phase: events.PhaseSync, Current: 90, Total: 150, BytesPerSecond: 7, ETA: 2 * time.Second})
	p.close()

	var prev events.Progress
	var msgs []string
	for i, ev := range s.got {
		if ev.Request != "r" || ev.Instance != "vm1" || ev.Node != "n1" || ev.State != events.ProgressRunning {
			t.Fatalf("event %d lost its identity: %+v", i, ev)
		}
		if ev.Current < prev.Current || ev.Total < prev.Total {
			t.Fatalf("event %d goes backwards: %+v after %+v", i, ev, prev)
		}
		prev = ev
		msgs = append(msgs, ev.Message)
	}
	if len(s.got) > 4 {
		t.Fatalf("%d events within one interval: %q", len(s.got), msgs)
	}
	if !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, "retrying (attempt 2/5)") }) {
		t.Fatalf("the retry notice was lost: %q", msgs)
	}
	last := s.got[len(s.got)-1]
	if last.Current != 90 || last.Total != 150 || last.BytesPerSecond != 7 || last.ETASeconds != 2 ||
		!strings.Contains(last.Message, "total grew") {
		t.Fatalf("last event %+v", last)
	}
}

// closeLeft hands back what the pump has not sent, for the end's
// transaction, and sends nothing more itself.
func TestPumpCloseLeftKeepsTheUnsent(t *testing.T) {
	var s sink
	p := newPump(events.Progress{Request: "r", Instance: "vm1", Node: "n1"}, time.Hour, s.send)
	p.report(Progress{Phase: events.PhaseSync, Current: 10, Total: 100})
	for s.count() == 0 { // the first report goes at once: no interval has begun
		time.Sleep(time.Millisecond) // polling the pump's goroutine; the test's deadline bounds it
	}
	p.report(Progress{Phase: events.PhaseSync, Current: 40, Total: 100}) // held: within the interval
	p.report(Progress{Phase: events.PhaseSync, Current: 100, Total: 100, Message: "sent"})
	left := p.closeLeft()
	if n := s.count(); n != 1 {
		t.Fatalf("the pump sent %d events, want only the first", n)
	}
	var got []string
	for _, ev := range left {
		got = append(got, fmt.Sprintf("%d %s", ev.Current, ev.Message))
	}
	want := []string{"100 sent"}
	if !slices.Equal(got, want) {
		t.Fatalf("left %q, want %q", got, want)
	}
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

func TestPlanMoves(t *testing.T) {
	groups := map[string]string{"n1": "g1", "n2": "g1", "n3": "g2"}
	pl := func(storage events.StorageKind, pri, sec string) *events.InstanceFacts {
		return &events.InstanceFacts{Storage: storage, Primary: pri, Secondary: sec, Groups: groups}
	}
	for _, c := range []struct {
		name string
		op   events.Opcode
		pl   *events.InstanceFacts
		want moves
	}{
		{"migrate mirrored swaps", events.Opcode{OpID: events.OpInstanceMigrate, From: "n1", To: "n2"},
			pl(events.StorageDRBD, "n1", "n2"), moves{"n1", "n2", "g1", "n2", "n1", "g1"}},
		{"failover mirrored swaps even with stale facts", events.Opcode{OpID: events.OpInstanceFailover, From: "n1", To: "n2"},
			pl(events.StorageZFSReplicated, "n1", "n3"), moves{"n1", "n2", "g1", "n2", "n1", "g1"}},
		{"migrate shared moves alone", events.Opcode{OpID: events.OpInstanceMigrate, From: "n1", To: "n3"},
			pl(events.StorageRBD, "n1", ""), moves{"n1", "", "g1", "n3", "", "g2"}},
		{"replace-disks keeps the primary", events.Opcode{OpID: events.OpInstanceReplaceDisks, From: "n1", To: "n3"},
			pl(events.StorageZFSReplicated, "n1", "n2"), moves{"n1", "n2", "g1", "n1", "n3", "g1"}},
	} {
		if got := planMoves(c.op, c.pl); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		kind     events.OpID
		success  bool
		from, to events.NodeMoveStatus
	}{
		{events.OpInstanceMigrate, true, events.StatusDown, events.StatusUp},
		{events.OpInstanceFailover, false, events.StatusUp, events.StatusDown},
		{events.OpInstanceReplaceDisks, true, events.StatusUp, events.StatusDown},
	} {
		if from, to := finalStatuses(c.kind, c.success); from != c.from || to != c.to {
			t.Errorf("%s success=%v: %s/%s", c.kind, c.success, from, to)
		}
	}
}

func TestErrorClasses(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		err       error
		transient bool
		fatal     bool
	}{
		{Transient(boom), true, false},
		{fmt.Errorf("wrapped: %w", transientf("link down")), true, false},
		{Fatal(boom), false, true},
		{boom, false, false},
		{fmt.Errorf("%w: aborted", ErrCanceled), false, false},
		{Transient(fmt.Errorf("%w: aborted", ErrCanceled)), false, false},
	} {
		if IsTransient(c.err) != c.transient || errors.Is(c.err, ErrFatal) != c.fatal {
			t.Errorf("%v: transient %v fatal %v", c.err, IsTransient(c.err), errors.Is(c.err, ErrFatal))
		}
	}
	if !errors.Is(Transient(boom), boom) || Transient(nil) != nil || Fatal(nil) != nil {
		t.Fatal("Transient and Fatal must keep the cause and leave nil alone")
	}
}

func TestConfigValidateReportsEverything(t *testing.T) {
	err := Config{Concurrency: -1, Retry: Retry{Attempts: -2, Initial: time.Second, Max: time.Millisecond},
		Announce: &events.NodeAnnounced{Name: "other"}}.Validate()
	for _, want := range []string{"Node", "Kafka", "Concurrency", "Retry.Attempts", "Retry.Max", "Announce.Name"} {
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to name %s", err, want)
		}
	}
	if _, err := New(Config{Node: "n1"}, nil); !strings.Contains(fmt.Sprint(err), "driver missing") {
		t.Errorf("New without a driver = %v", err)
	}
	r := Config{}.withDefaults().Retry
	var waits []time.Duration
	for n := 2; n <= 8; n++ {
		waits = append(waits, r.policy().Wait(n))
	}
	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Fatalf("backoffs %v, want %v", waits, want)
	}
}

func TestSlotsAdmitInOrder(t *testing.T) {
	s := newSlots(1)
	a, b, c := s.enqueue(), s.enqueue(), s.enqueue()
	granted := func(t chan struct{}) bool {
		select {
		case <-t:
			return true
		default:
			return false
		}
	}
	if !granted(a) || granted(b) || granted(c) {
		t.Fatal("one slot: only the first ticket runs")
	}
	s.leave(b) // b gives up its place in line
	s.leave(a) // a finishes: its slot goes to c, not back to the pool
	if !granted(c) || granted(b) {
		t.Fatal("the slot did not pass to the next in line")
	}
	s.leave(c)
	if d := s.enqueue(); !granted(d) {
		t.Fatal("a free slot was lost")
	}
}

// The checkpoint is the oldest debt, stays before a paid one for the
// linger, then passes it and forgets it; with nothing owed it is the
// reader's position.
func TestOwedCheckpoint(t *testing.T) {
	o := newOwed(time.Hour)
	o.start(10)
	forgot := map[string]bool{}
	owe := func(id string, off int64) { o.owe(id, off, func() { forgot[id] = true }) }
	if at, moved := o.point(); at != 10 || moved {
		t.Fatalf("fresh point = %d, moved %v; want 10, unmoved", at, moved)
	}
	owe("a", 12)
	owe("b", 15)
	owe("a", 20) // a second record of the same debt: the first counts
	o.advance(30)
	if at, _ := o.point(); at != 12 {
		t.Fatalf("point = %d, want 12 (a's dispatch)", at)
	}
	o.pay("a")
	if at, _ := o.point(); at != 12 || forgot["a"] {
		t.Fatalf("point = %d (forgot a: %v), want still 12 while a lingers", at, forgot["a"])
	}
	o.linger = 0
	if at, moved := o.point(); at != 15 || !moved || !forgot["a"] {
		t.Fatalf("point = %d moved %v forgot a %v; want 15, moved, a forgotten", at, moved, forgot["a"])
	}
	o.saved(15)
	o.pay("b")
	if at, _ := o.point(); at != 30 || !forgot["b"] || o.count() != 0 {
		t.Fatalf("point = %d, owed %d; want the position 30 and nothing owed", at, o.count())
	}
}

// transientf is Transient over fmt.Errorf.
func transientf(format string, args ...any) error { return Transient(fmt.Errorf(format, args...)) }
