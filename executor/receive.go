package executor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// The target side of moves (Receiver) and the rendezvous of the two sides.
//
// The executor of an opcode's To node runs the driver's Receive for every
// opcode dispatched to another node (its From) whose To is this node, each
// in its own goroutine: receivers take no slot, because a source holding a
// slot would otherwise wait on a target whose slots it fills. Once the
// receiver listens, the executor appends ReceiverReady (Node: the source,
// Target: this node, Addr) to drove.opcodes; the source's executor folds
// those and hands the newest address to its driver through
// Op.AwaitReceiver. Either side may start first; a restarted receiver
// listens anew and announces again, and a sender that cannot reach an old
// address asks again and gets the newest.
//
// A receiver ends when Receive returns (the move committed, or the source
// aborted), when the source's OpcodeEnded or an OpcodeCancelled arrives,
// or when the executor shuts down. Its context's cause tells the driver
// which: a cause wrapping ErrCanceled (the move was cancelled or failed on
// the source) means roll back what was received; shutdown means keep it,
// so the next receiver continues from the last received snapshot.

// rendezvous is the executor's state for the two sides of moves.
type rendezvous struct {
	mu      sync.Mutex
	addrs   map[opKey]string // newest announcement, for opcodes this node sends
	changed chan struct{}    // closed and replaced on every announcement
	recv    map[opKey]*receiving
	done    map[opKey]bool           // receivers that need not run again
	pending map[opKey]pendingReceive // found at recovery, started after it
	order   []opKey                  // pending, in dispatch order
	source  map[opKey]string         // opcode → its source node, for ends
	drop    func(ctx context.Context, instance string) error
}

type receiving struct {
	cancel context.CancelCauseFunc
}

type pendingReceive struct {
	env events.Envelope
	d   events.OpcodeDispatched
	off int64 // of the record that asked for it, for the checkpoint
}

func newRendezvous() *rendezvous {
	return &rendezvous{addrs: map[opKey]string{}, changed: make(chan struct{}),
		recv: map[opKey]*receiving{}, done: map[opKey]bool{}, pending: map[opKey]pendingReceive{},
		source: map[opKey]string{}}
}

// sourceEnded is the cause a receiver is stopped with when the source's
// opcode ended: on error or cancel it wraps ErrCanceled (roll back).
type sourceEnded struct{ status events.JobStatus }

func (s *sourceEnded) Error() string { return "the source ended the opcode: " + string(s.status) }
func (s *sourceEnded) Unwrap() error {
	if s.status == events.JobSuccess {
		return nil
	}
	return ErrCanceled
}

// receiver is the driver as a Receiver, or nil.
func (e *Executor) receiver() Receiver {
	r, _ := e.driver.(Receiver)
	return r
}

// observeOpcode folds the rendezvous' share of a drove.opcodes record at
// offset off of this node's partition (a TargetNotified's relayed event
// counts as at the relay's offset). During recovery (replay) receivers
// are noted, not started: later records may show them ended.
func (e *Executor) observeOpcode(env events.Envelope, p events.Payload, replay bool, off int64) {
	if e.receiver() == nil {
		return
	}
	rv := e.rv
	switch v := p.(type) {
	case events.ReceiverReady:
		if v.Node != e.cfg.Node {
			return
		}
		rv.mu.Lock()
		rv.addrs[opKey{v.Request, v.Job, v.Index}] = v.Addr
		close(rv.changed)
		rv.changed = make(chan struct{})
		rv.mu.Unlock()
	case events.OpcodeDispatched:
		if v.Opcode.To != e.cfg.Node || v.Node == e.cfg.Node {
			return
		}
		k := opKey{v.Request, v.Job, v.Index}
		rv.mu.Lock()
		rv.source[k] = v.Node
		if replay {
			if _, seen := rv.pending[k]; !seen && !rv.done[k] {
				rv.pending[k] = pendingReceive{env, v, off}
				rv.order = append(rv.order, k)
			}
			rv.mu.Unlock()
			return
		}
		rv.mu.Unlock()
		e.startReceiver(env, v, off)
	case events.OpcodeEnded:
		e.stopReceiver(opKey{v.Request, v.Job, v.Index}, v.Node, &sourceEnded{v.Status})
	case events.OpcodeCancelled:
		e.stopReceiver(opKey{v.Request, v.Job, v.Index}, v.Node, &cancelRequest{v.Reason})
	case events.MigrationPhaseDispatched, events.MigrationPhaseEnded:
		e.observePhase(env, p, replay, off) // migration_receive.go
	}
}

// resumeReceivers starts the receivers recovery found owed.
func (e *Executor) resumeReceivers() {
	rv := e.rv
	rv.mu.Lock()
	var start []pendingReceive
	for _, k := range rv.order {
		if p, ok := rv.pending[k]; ok && !rv.done[k] {
			start = append(start, p)
		}
	}
	rv.pending, rv.order = map[opKey]pendingReceive{}, nil
	rv.mu.Unlock()
	for _, p := range start {
		e.log.Info("resuming the target side of an opcode dispatched before this start", "opcode", opKey{p.d.Request, p.d.Job, p.d.Index})
		e.startReceiver(p.env, p.d, p.off)
	}
}

func (e *Executor) stopReceiver(k opKey, node string, cause error) {
	rv := e.rv
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if src, ok := rv.source[k]; !ok || src != node {
		return // not an opcode this node receives, or not its source speaking
	}
	rv.done[k] = true
	e.owed.pay(receiveID(k))
	delete(rv.pending, k)
	if r := rv.recv[k]; r != nil {
		r.cancel(cause)
	}
}

// startReceiver runs Receive for a dispatch at offset off unless it runs
// or is done; until it is done, the checkpoint stays at or before off.
func (e *Executor) startReceiver(env events.Envelope, d events.OpcodeDispatched, off int64) {
	k := opKey{d.Request, d.Job, d.Index}
	rv := e.rv
	e.mu.Lock()
	base := e.base
	e.mu.Unlock()
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.done[k] || rv.recv[k] != nil || base == nil {
		return
	}
	ctx, cancel := context.WithCancelCause(base)
	rv.recv[k] = &receiving{cancel: cancel}
	e.owed.owe(receiveID(k), off, func() {
		rv.mu.Lock()
		delete(rv.done, k)
		delete(rv.source, k)
		rv.mu.Unlock()
	})
	e.wg.Add(1)
	go e.runReceiver(ctx, cancel, k, env, d)
}

// runReceiver calls Receive until it commits or is told to stop, retrying
// transient faults: a receiver that stops listening strands its source.
func (e *Executor) runReceiver(ctx context.Context, cancel context.CancelCauseFunc, k opKey, env events.Envelope, d events.OpcodeDispatched) {
	defer e.wg.Done()
	defer cancel(nil)
	log := e.log.With("opcode", k, "instance", d.Opcode.Instance, "side", "target")
	finish := func(done bool) {
		e.rv.mu.Lock()
		delete(e.rv.recv, k)
		if done {
			e.rv.done[k] = true
			e.owed.pay(receiveID(k))
		}
		e.rv.mu.Unlock()
	}
	op := e.receiveOp(d)
	pol := e.cfg.Retry.policy()
	pol.Tries = 0 // the target listens again until it is told to stop
	err := pol.Do(ctx, IsTransient, func(n int) error {
		op.Attempt = n
		return e.receiver().Receive(e.link(ctx, d.Node), op, func(addr string) { e.announce(ctx, env, d, addr, log) },
			func(p Progress) { log.Debug("receive progress", "current", p.Current, "message", p.Message) })
	}, func(_ int, err error, wait time.Duration) {
		log.Warn("target side failed; listening again", "err", err, "backoff", wait)
	})
	switch {
	case err == nil:
		log.Info("target side done")
		finish(true)
	case ctx.Err() != nil:
		log.Info("target side stopped", "cause", context.Cause(ctx), "err", err)
		finish(!errors.Is(context.Cause(ctx), errShutdown))
	default:
		log.Warn("target side ended", "err", err)
		finish(true)
	}
}

// receiveOp is the Op the target side sees: the dispatch with the facts
// it carries (none: a zero size and storage, which a driver refuses).
func (e *Executor) receiveOp(d events.OpcodeDispatched) Op {
	op := d.Opcode
	var f events.InstanceFacts
	if d.Facts != nil {
		f = *d.Facts
	}
	return Op{
		Request: d.Request, Job: d.Job, Index: d.Index,
		Kind: op.OpID, Mode: op.Mode, AllowFailover: op.AllowFailover,
		Instance: op.Instance, Size: f.Size, Storage: f.Storage, RunState: f.RunState,
		From: op.From, To: op.To, Primary: f.Primary, Secondary: f.Secondary,
		ListenAddr: e.cfg.ListenAddr,
	}
}

// announce appends ReceiverReady for addr, retrying until it is in the
// log or ctx ends: an unannounced receiver is one no source finds.
func (e *Executor) announce(ctx context.Context, env events.Envelope, d events.OpcodeDispatched, addr string, log interface{ Info(string, ...any) }) {
	addr = advertise(addr, e.cfg.AdvertiseAddr)
	ready := events.ReceiverReady{Request: d.Request, Job: d.Job, Index: d.Index,
		Node: d.Node, Target: e.cfg.Node, Addr: addr}
	req := d.Request
	if req == "" {
		req = env.CorrelationID
	}
	ev := events.New(ready, events.CausedBy(env), events.WithProducer(e.actor),
		events.WithReason(events.Reason{Actor: e.actor, RequestID: req,
			Why: fmt.Sprintf("%s receives %s of %s from %s at %s", e.cfg.Node, ShortKind(d.Opcode.OpID), d.Opcode.Instance, d.Node, addr)}))
	if err := e.appendHard(ctx, []kafka.Message{{Topic: events.TopicOpcodes, Event: ev}}); err != nil {
		e.log.Warn("announcing the receiver failed", "err", err)
		return
	}
	log.Info("receiver listening", "addr", addr)
}

// advertise replaces the host (and the port, if given and not 0) of addr
// with adv's.
func advertise(addr, adv string) string {
	if adv == "" {
		return addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	ah, ap, err := net.SplitHostPort(adv)
	if err != nil {
		ah, ap = adv, ""
	}
	if ah != "" {
		host = ah
	}
	if ap != "" && ap != "0" {
		port = ap
	}
	return net.JoinHostPort(host, port)
}

// awaitReceiver is Op.AwaitReceiver for opcode k: the newest announced
// address, waiting for one if none came yet.
func (e *Executor) awaitReceiver(k opKey) func(ctx context.Context) (string, error) {
	if e.receiver() == nil {
		return nil
	}
	return func(ctx context.Context) (string, error) {
		for {
			e.rv.mu.Lock()
			addr, ok := e.rv.addrs[k]
			ch := e.rv.changed
			e.rv.mu.Unlock()
			if ok {
				return addr, nil
			}
			select {
			case <-ch:
			case <-ctx.Done():
				return "", fmt.Errorf("executor: no receiver announced for %s: %w", k, ctx.Err())
			}
		}
	}
}

// dropsReplica reports whether a placement leaves its previous secondary
// without a copy of the instance (replace-disks moved the replica
// elsewhere): the executor that placed it relays it there (writeEnd).
func dropsReplica(v events.InstancePlaced) bool {
	n := v.PreviousSecondary
	return n != "" && n != v.SecondaryNode && n != v.PrimaryNode
}

// observePlaced drops the replica this node held once a placement relayed
// to it (dropsReplica) shows it is no longer needed here. Drivers opt in
// by implementing ReplicaDropper.
func (e *Executor) observePlaced(v events.InstancePlaced) {
	dr, ok := e.driver.(ReplicaDropper)
	if !ok || v.PreviousSecondary != e.cfg.Node || !dropsReplica(v) {
		return
	}
	e.mu.Lock()
	base := e.base
	e.mu.Unlock()
	if base == nil {
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if err := dr.DropReplica(base, v.Instance); err != nil {
			e.log.Warn("dropping the old replica failed", "instance", v.Instance, "err", err)
			return
		}
		e.log.Info("dropped the old replica", "instance", v.Instance)
	}()
}

// ReplicaDropper is implemented by drivers that keep replicas (zfs): the
// executor of a node that stopped being an instance's secondary calls
// DropReplica there, since the opcode that moved the replica ran on the
// primary and cannot reach this node's storage.
type ReplicaDropper interface {
	DropReplica(ctx context.Context, instance string) error
}
