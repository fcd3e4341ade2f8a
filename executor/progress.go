package executor

import (
	"fmt"
	"sync"
	"time"

	"github.com/drovehq/drove/events"
)

// pump turns one opcode's driver reports into Progress events on
// drove.progress. Drivers report as often as they like from their own
// goroutine; the pump keeps the latest report and sends at most one event
// per interval, so a fast driver neither floods the log nor waits on Kafka.
// Notices (retries) are never dropped and keep their place in the order.
//
// It also keeps what watchers see monotonic across attempts: Current never
// goes backwards (a retried attempt that resends data is not counted
// again) and Total never shrinks; when Total grows, the message says why
// the percentage dipped.
type pump struct {
	interval time.Duration
	send     func(events.Progress)
	now      func() time.Time
	base     events.Progress // identity fields: request, job, index, instance, node

	mu         sync.Mutex
	queue      []events.Progress // notices and the reports they follow
	pending    *events.Progress  // latest report not yet sent
	cur, total int64
	phase      string
	phaseStart time.Time
	lastSent   time.Time

	wake     chan struct{}
	stop     chan struct{}
	finished chan struct{}
}

func newPump(base events.Progress, interval time.Duration, send func(events.Progress)) *pump {
	p := &pump{
		interval: interval, send: send, now: time.Now, base: base,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), finished: make(chan struct{}),
	}
	go p.run()
	return p
}

// report is the callback handed to the driver.
func (p *pump) report(r Progress) {
	p.mu.Lock()
	ev := p.normalize(r)
	p.pending = &ev
	p.mu.Unlock()
	p.poke()
}

// notice queues a message that must be seen, such as a retry, after every
// report before it.
func (p *pump) notice(msg, errText string) {
	p.mu.Lock()
	if p.pending != nil {
		p.queue = append(p.queue, *p.pending)
		p.pending = nil
	}
	ev := p.event(p.phase)
	ev.Current, ev.Total = p.cur, p.total
	ev.Message, ev.Error = msg, errText
	p.queue = append(p.queue, ev)
	p.mu.Unlock()
	p.poke()
}

// phaseNow returns the phase of the last report, "begin" before any.
func (p *pump) phaseNow() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.phase == "" {
		return events.PhaseBegin
	}
	return p.phase
}

// close stops the pump and sends what is left; the last report always
// reaches the log, so a finished move shows Current == Total.
func (p *pump) close() {
	for _, ev := range p.closeLeft() {
		p.send(ev)
	}
}

// closeLeft stops the pump and returns what it has not sent, for the
// caller to append in the end's own transaction: the last report reaches
// the log with the end, not in an append of its own that the end waited
// for (5-10 ms at the end of every phase).
func (p *pump) closeLeft() []events.Progress {
	close(p.stop)
	<-p.finished
	p.mu.Lock()
	defer p.mu.Unlock()
	left := p.queue
	if p.pending != nil {
		left = append(left, *p.pending)
	}
	p.queue, p.pending = nil, nil
	return left
}

func (p *pump) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *pump) run() {
	defer close(p.finished)
	for {
		select {
		case <-p.wake:
		case <-p.stop:
			return // what is left is closeLeft's
		}
		p.mu.Lock()
		wait := p.lastSent.Add(p.interval).Sub(p.now())
		urgent := len(p.queue) > 0
		p.mu.Unlock()
		if wait > 0 && !urgent {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-p.stop:
				t.Stop()
				return
			}
		}
		p.flush()
	}
}

func (p *pump) flush() {
	p.mu.Lock()
	out := p.queue
	p.queue = nil
	if p.pending != nil {
		out = append(out, *p.pending)
		p.pending = nil
	}
	if len(out) > 0 {
		p.lastSent = p.now()
	}
	p.mu.Unlock()
	for _, ev := range out {
		p.send(ev)
	}
}

// normalize applies the monotonic rules to a report; p.mu is held.
func (p *pump) normalize(r Progress) events.Progress {
	if r.Phase == "" {
		r.Phase = p.phase
	}
	ev := p.event(r.Phase)
	msg := r.Message
	cur, total := max(r.Current, p.cur, 0), max(r.Total, p.total, 0)
	if r.Current < p.cur {
		msg = join(msg, fmt.Sprintf("resending %s already counted", events.FormatBytes(p.cur-r.Current)))
	}
	if total > p.total && p.total > 0 && p.cur > 0 {
		msg = join(msg, fmt.Sprintf("total grew from %s to %s", events.FormatBytes(p.total), events.FormatBytes(total)))
	}
	total = max(total, cur)
	p.cur, p.total = cur, total
	ev.Current, ev.Total = cur, total
	ev.BytesPerSecond = max(r.BytesPerSecond, 0)
	ev.ETASeconds = max(r.ETA.Seconds(), 0)
	ev.Message = msg
	if r.State != "" {
		ev.State = r.State
	}
	return ev
}

// event starts an event in phase, tracking when the phase began; p.mu is
// held.
func (p *pump) event(phase string) events.Progress {
	now := p.now()
	if phase == "" {
		phase = events.PhaseBegin
	}
	if phase != p.phase || p.phaseStart.IsZero() {
		p.phase, p.phaseStart = phase, now
	}
	ev := p.base
	ev.Phase = phase
	ev.State = events.ProgressRunning
	ev.Started = p.phaseStart.UTC()
	ev.DurationSeconds = now.Sub(p.phaseStart).Seconds()
	return ev
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
