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
// gives up on it. Once fallen, the lease comes back only when a heartbeat
// lands again and the log shows the planner did not give up on the node
// meanwhile (regain.go).

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
	fellFrom time.Time // the last renewal before the latest fall: a proof reads the log from there
	proving  bool      // a heartbeat landed after the fall; regain.go reads whether the planner gave up meanwhile
	regained time.Time // dispatches stamped from then on may start (regain.go)
}

// started counts an Executor's start as a renewal when the lease never
// fell: the executor has just read its history from the log. After a fall
// only a heartbeat that lands, and its proof (regain.go), bring it back: a
// start proves the log answers reads, not that the planner still counts on
// the node.
func (l *Lease) started(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.fell {
		l.later(t)
		l.held = true
	}
}

// renewed records a heartbeat appended that began at t. One after a fall
// does not bring the lease back: the first reports prove, with the last
// renewal before the fall (since), and the lease stays down until regain.
func (l *Lease) renewed(t time.Time) (since time.Time, prove bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.later(t)
	switch {
	case l.held || !l.fell:
		l.held = true
	case !l.proving:
		l.proving = true
		return l.fellFrom, true
	}
	return time.Time{}, false
}

// later moves the last renewal to t unless it is later already. The
// caller holds mu.
func (l *Lease) later(t time.Time) {
	if t.After(l.last) {
		l.last = t
	}
}

// deadline is when a heartbeat begun at at must have landed to count.
// While the lease holds, before it would lapse (the last renewal plus the
// fence): a heartbeat that counts then lies before any LeaseCheck the
// planner appends, which comes a NodeLease (> Fence) after the heartbeat
// it read last, so the planner reads it first. A heartbeat taking a whole
// fence from its own start could land after such a check, and the lease
// would hold on a node the planner gave up on. After a fall, a fence from
// its start: regain.go proves what it finds.
func (l *Lease) deadline(at time.Time, fence time.Duration) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		return l.last.Add(fence)
	}
	return at.Add(fence)
}

// regain brings the lease back after a fall, for moves dispatched from
// from on (regain.go says which).
func (l *Lease) regain(from time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held, l.proving, l.regained = true, false, from
}

// unproven gives up a proof that could not be made: the next heartbeat
// that lands tries again.
func (l *Lease) unproven() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.proving = false
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
	return (l.held || !l.fell) && now.Sub(l.last) < fence, l.last
}

// lapsed reports, once per fall, that the lease no longer holds.
func (l *Lease) lapsed(now time.Time, fence time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held || now.Sub(l.last) < fence {
		return false
	}
	l.held, l.fell, l.fellFrom = false, true, l.last
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
	e.lease.started(time.Now())
	beat := func() {
		at := time.Now()
		env := events.New(events.NodeHeartbeat{Node: e.cfg.Node, IntervalMS: hb.Milliseconds(), Sent: at},
			events.WithProducer(e.actor),
			events.WithReason(events.Reason{Actor: e.actor, Why: "lease of node " + e.cfg.Node}))
		actx, cancel := context.WithDeadline(ctx, e.lease.deadline(at, fence))
		defer cancel()
		if err := e.append(actx, events.TopicHeartbeats, env); err != nil {
			if ctx.Err() == nil {
				e.log.Warn("heartbeat not appended", "err", err)
			}
			return
		}
		if since, prove := e.lease.renewed(at); prove {
			e.wg.Add(1)
			go func() { defer e.wg.Done(); e.regain(ctx, since, at, env.ID) }() // regain.go
		}
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
