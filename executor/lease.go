package executor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/drovehq/drove/events"
)

// The executor's lease (DESIGN.md, "Node lifecycle"). Every Heartbeat the
// executor appends a NodeHeartbeat for its node; the planner service
// declares the node lost when it has read none for its NodeLease. The
// executor fences itself on the same evidence seen from its side: when no
// heartbeat append has succeeded for Fence (it is cut off from the broker,
// or the broker from it), it cancels the moves it runs, so drivers roll
// them back short of the point of no return, and it refuses to switch a
// migration. An append that succeeded began before the planner could read
// it, so the executor's clock runs ahead of the planner's: with Fence
// below NodeLease, the executor has stopped before the rest of the system
// gives up on it.

// errFenced is the cancel cause of moves stopped by the fence.
var errFenced = fmt.Errorf("%w: fenced: no heartbeat reached the log within the fence", ErrCanceled)

// Lease is a node's lease as its executors see it. It outlives one
// Executor: when the log fences the producer (ErrProducerFenced), Run ends
// and its supervisor starts a new Executor, which must know whether the
// fence had fallen. Started with a lease of its own it would count the
// lease as held, and resume the moves the fence stopped, on a node the
// planner may have declared lost meanwhile (test/partition saw an opcode
// start again so, 14 s after the loss). Give each Executor of a node in
// one process the same Lease (Config.Lease); its zero value is a lease
// never held, as at a process's start.
type Lease struct {
	mu       sync.Mutex
	last     time.Time // start of the last heartbeat append that succeeded
	held     bool      // the fence has not fallen since the last renewal
	fell     bool      // the fence has fallen at least once
	regained time.Time // start of the first renewal after the latest fall
}

// renewed records a heartbeat appended that began at t.
func (l *Lease) renewed(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.After(l.last) {
		l.last = t
	}
	if l.fell && !l.held {
		l.regained = t
	}
	l.held = true
}

// admits reports whether a move dispatched at stamp may start. Not while
// the fence is down; and after a fall, not one dispatched before the lease
// was regained: the executor may only read it now, having been cut off,
// and the planner may have declared the node lost in between and given up
// on the move (a begin phase dispatched during a cut, run after the heal,
// reserved its instance on the target of a migration already failed).
// The fence cancels what was queued or running when it fell; this keeps
// it from starting what came in while it was down.
func (l *Lease) admits(stamp time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.fell || l.held && !stamp.Before(l.regained)
}

// valid reports whether the lease holds at now, and since when it was last
// renewed.
func (l *Lease) valid(now time.Time, fence time.Duration) (bool, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return now.Sub(l.last) < fence, l.last
}

// lapsed reports, once per fall, that the lease no longer holds.
func (l *Lease) lapsed(now time.Time, fence time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held || now.Sub(l.last) < fence {
		return false
	}
	l.held, l.fell = false, true
	return true
}

// keepLease sends heartbeats and fences the executor when they stop
// reaching the log, until ctx ends. The lease counts as renewed at start:
// the executor has just read its history from the log.
func (e *Executor) keepLease(ctx context.Context) {
	hb, fence := e.cfg.Heartbeat, e.cfg.Fence
	if hb <= 0 {
		return
	}
	e.lease.renewed(time.Now())
	beat := func() {
		at := time.Now()
		env := events.New(events.NodeHeartbeat{Node: e.cfg.Node, IntervalMS: hb.Milliseconds(), Sent: at},
			events.WithProducer(e.actor),
			events.WithReason(events.Reason{Actor: e.actor, Why: "lease of node " + e.cfg.Node}))
		actx, cancel := context.WithTimeout(ctx, fence)
		defer cancel()
		if err := e.append(actx, events.TopicHeartbeats, env); err != nil {
			if ctx.Err() == nil {
				e.log.Warn("heartbeat not appended", "err", err)
			}
			return
		}
		e.lease.renewed(at)
	}
	// The fence is checked on its own beat: a heartbeat append may hang
	// for as long as the fence while the broker is unreachable.
	go func() {
		t := time.NewTicker(max(fence/10, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if e.lease.lapsed(now, fence) {
					e.fence()
				}
			}
		}
	}()
	t := time.NewTicker(hb)
	defer t.Stop()
	for {
		beat()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// fence cancels every move the executor runs: opcodes end canceled (the
// driver rolls back unless past the point of no return) and migration
// phases end canceled, once their ends can reach the log again.
func (e *Executor) fence() {
	_, last := e.lease.valid(time.Now(), e.cfg.Fence)
	e.log.Warn("lease lost: no heartbeat reached the log; cancelling the moves under way",
		"last_renewal", last, "fence", e.cfg.Fence)
	e.mu.Lock()
	keys := make([]opKey, 0, len(e.tasks))
	for k := range e.tasks {
		keys = append(keys, k)
	}
	e.mu.Unlock()
	for _, k := range keys {
		e.cancel(k, errFenced.Error())
	}
	e.mig.mu.Lock()
	defer e.mig.mu.Unlock()
	for _, t := range e.mig.tasks {
		t.cancel(errFencedPhase)
	}
}

// errFencedPhase supersedes a migration phase: it ends canceled.
var errFencedPhase = fmt.Errorf("%w: fenced: no heartbeat reached the log within the fence", errSuperseded)

// mayAct refuses a step past which a move cannot be undone (a migration's
// switch) when the lease does not hold.
func (e *Executor) mayAct(what string) error {
	if e.cfg.Heartbeat <= 0 {
		return nil
	}
	if ok, last := e.lease.valid(time.Now(), e.cfg.Fence); !ok {
		return Fatalf("fenced: not starting %s: no heartbeat reached the log since %s (fence %s)",
			what, last.Format(time.RFC3339Nano), e.cfg.Fence)
	}
	return nil
}
