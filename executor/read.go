package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// How an executor reads its work (DESIGN.md, "The backbone").
//
// drove.opcodes is keyed by node, so everything dispatched to a node, and
// the node's own word on it, lies in the one partition its name maps to
// (kafka.PartitionOf, the producers' partitioner). The executor reads only
// that partition, and the target side of a move learns of it from the
// source's relays (TargetNotified, keyed by the target), so its reads are
// about 1/partitions of the opcode traffic, whatever the cluster's size.
//
// Where it starts is its checkpoint: the committed offset of its node's
// consumer group (events.ExecutorGroup), kept with kafka.Checkpoint and
// never moved past a record the node still owes work for — an opcode
// dispatched and not ended, a receiver not done, a migration phase not
// ended (owed). A restart reads from there: every record before it is
// paid for, and every owed record is read again, with what came after it
// (its cancellation, its receiver's address). So a restart costs what the
// node did since its oldest unfinished work, not the cluster's history.
//
// The executor reads no inventory: what an opcode needs to know of its
// instance and nodes comes in its dispatch (events.InstanceFacts), and a
// placement that leaves this node without its replica is relayed to it
// by the executor that made it. drove.settings, one small record per
// operator change, is read whole at every start (the last one wins).

// checkpointEvery is how often the checkpoint may move: at most one
// commit per interval, and a paid debt moves it within one when no record
// arrives. A commit is a write to the broker's offsets log; made after
// every batch, the 24 executors of the demo cluster committed some 40
// times a second, the broker's busiest client. A checkpoint a few seconds
// old only makes a restart re-read those seconds.
const checkpointEvery = 5 * time.Second

// read opens the reader and the checkpoint, recovers what is owed, then
// handles records as they come until ctx ends.
func (e *Executor) read(ctx, base context.Context) error {
	kc := e.cfg.Kafka
	cp, err := kafka.OpenCheckpoint(kc, events.ExecutorGroup(e.cfg.Node))
	if err != nil {
		return err
	}
	defer cp.Close()
	var r *kafka.Reader
	err = e.startStep(ctx, "opening the log", func() error {
		from, err := cp.Load(ctx, events.TopicOpcodes)
		if err != nil {
			return err
		}
		r, err = kafka.NewReader(ctx, kc, kafka.ReadOptions{
			Topics: []string{events.TopicOpcodes, events.TopicSettings},
			Keys:   map[string][]string{events.TopicOpcodes: {e.cfg.Node}},
			From:   from, Follow: true, MaxWait: checkpointEvery,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	defer r.Close()
	e.reader.Store(r)
	tp := kafka.TopicPartition{Topic: events.TopicOpcodes, Partition: r.Partitions()[events.TopicOpcodes][0]}
	e.owed.start(r.Position()[tp])
	e.log.Info("executor reading", "partition", tp, "from", r.Position()[tp])

	var ops []kafka.Record // recovery: this partition up to where the log stood
	recovering := true
	var keptAt time.Time
	for {
		if recovering && r.CaughtUp() {
			if err := e.recover(ops); err != nil {
				return err
			}
			recovering, ops = false, nil
			e.log.Info("executor running", "concurrency", e.cfg.Concurrency, "owed", e.owed.count())
		}
		if !recovering && time.Since(keptAt) >= checkpointEvery {
			e.keep(ctx, cp, tp)
			keptAt = time.Now()
		}
		b, err := e.next(base, r)
		if base.Err() != nil {
			if c := context.Cause(base); errors.Is(c, ErrProducerFenced) {
				return c
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("executor: %w", err)
		}
		recs, err := b.Decode()
		if err != nil {
			return fmt.Errorf("executor: %w", err)
		}
		for _, rec := range recs {
			switch {
			case !recovering:
				err = e.handle(rec)
			case rec.Topic == events.TopicOpcodes:
				ops = append(ops, rec)
			default:
				err = e.applySettings(rec)
			}
			if err != nil {
				return fmt.Errorf("executor: %s (%s %s): %w", rec, rec.Event.Type, rec.Event.ID, err)
			}
		}
		if n, ok := b.Next[tp]; ok {
			e.owed.advance(n)
		}
	}
}

// startStep runs a step of the start (ensuring the topics, loading the
// checkpoint and opening the reader) until it works, riding out failures
// a retry may cure: a broker restarting, or too busy to answer in time
// while a whole fleet starts.
func (e *Executor) startStep(ctx context.Context, what string, step func() error) error {
	pol := e.cfg.Retry.policy()
	pol.Tries = 0
	return pol.Do(ctx, kafka.IsRetryable, func(int) error { return step() },
		func(next int, err error, wait time.Duration) {
			e.log.Warn(what+" failed; retrying", "try", next, "wait", wait, "err", err)
		})
}

// next reads the next batch, riding out failures a retry may cure (a
// broker restarting).
func (e *Executor) next(ctx context.Context, r *kafka.Reader) (kafka.Batch, error) {
	pol := e.cfg.Retry.policy()
	pol.Tries = 0
	var b kafka.Batch
	err := pol.Do(ctx, kafka.IsRetryable, func(int) error {
		var err error
		b, err = r.Next(ctx)
		return err
	}, func(next int, err error, wait time.Duration) {
		e.log.Warn("reading the log failed; retrying", "try", next, "wait", wait, "err", err)
	})
	return b, err
}

// keep saves the checkpoint when it moved. A failed save is only logged:
// the older checkpoint re-reads a little more at the next start.
func (e *Executor) keep(ctx context.Context, cp *kafka.Checkpoint, tp kafka.TopicPartition) {
	at, moved := e.owed.point()
	if !moved {
		return
	}
	if err := cp.Save(ctx, kafka.Positions{tp: at}); err != nil {
		e.log.Warn("checkpoint not saved", "at", at, "err", err)
		return
	}
	e.owed.saved(at)
}

// Fetched is what the executor's reader fetched from the brokers, per
// topic, since Run began: the cost of its reads (tests, the fleet
// benchmark).
func (e *Executor) Fetched() map[string]kafka.FetchStats {
	if r := e.reader.Load(); r != nil {
		return r.Fetched()
	}
	return nil
}

// owed is the work this node owes, each debt with the offset of the record
// that made it, and the reader's position in the node's partition: the
// checkpoint is the oldest debt, or the position when nothing is owed.
//
// A debt paid is kept for linger more: a dispatch may be in the log twice
// (the planner appends again, same event, when Kafka could not confirm its
// commit), and the copy may land after the opcode's end. A restart must
// read the end before such a copy to know it is one, so the checkpoint
// stays before a paid debt for longer than the planner retries an append.
type owed struct {
	mu     sync.Mutex
	at     map[string]debt
	pos    int64
	kept   int64 // the checkpoint last saved; -1 none
	linger time.Duration
}

type debt struct {
	off    int64
	paid   time.Time // zero while owed
	forget func()    // drops what the executor remembers of it, once it lingered
}

func newOwed(linger time.Duration) *owed {
	return &owed{at: map[string]debt{}, kept: -1, linger: linger}
}

func opcodeID(k opKey) string  { return "opcode " + k.String() }
func receiveID(k opKey) string { return "receive " + k.String() }
func phaseID(k migKey) string  { return "phase " + k.String() }

func (o *owed) start(pos int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pos, o.kept = pos, pos
}

// owe notes a debt; the first record that made it counts. forget is
// called (with no lock of owed held) once the debt is paid and lingered:
// past the checkpoint, what the executor remembers of it (that it ended,
// was cancelled, received) is no longer needed, since no restart reads
// its records again. So the executor holds what its node's active work
// needs, not its history.
func (o *owed) owe(id string, off int64, forget func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d, ok := o.at[id]
	switch {
	case !ok:
		o.at[id] = debt{off: off, forget: forget}
	case !d.paid.IsZero(): // owed again: the older record still counts
		o.at[id] = debt{off: min(d.off, off), forget: forget}
	}
}

// pay forgets a debt whose end is in the log.
func (o *owed) pay(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if d, ok := o.at[id]; ok && d.paid.IsZero() {
		d.paid = time.Now()
		o.at[id] = d
	}
}

func (o *owed) advance(next int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pos = max(o.pos, next)
}

// point is the checkpoint now, and whether it differs from the one saved;
// it forgets the debts paid longer than linger ago.
func (o *owed) point() (int64, bool) {
	o.mu.Lock()
	at := o.pos
	var forget []func()
	for id, d := range o.at {
		if !d.paid.IsZero() && time.Since(d.paid) >= o.linger {
			delete(o.at, id)
			if d.forget != nil {
				forget = append(forget, d.forget)
			}
			continue
		}
		at = min(at, d.off)
	}
	moved := at != o.kept
	o.mu.Unlock()
	for _, f := range forget {
		f()
	}
	return at, moved
}

func (o *owed) saved(at int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.kept = at
}

// count is the debts not paid.
func (o *owed) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, d := range o.at {
		if d.paid.IsZero() {
			n++
		}
	}
	return n
}

// targetNotice is the relay of env to a move's target node, when the
// target is another node: the target reads only its own partition.
func (e *Executor) targetNotice(target string, env events.Envelope) []kafka.Message {
	if target == "" || target == e.cfg.Node {
		return nil
	}
	ev := events.New(events.TargetNotified{Node: target, Event: env}, events.CausedBy(env),
		events.WithProducer(e.actor),
		events.WithReason(events.Reason{Actor: e.actor, RequestID: env.CorrelationID,
			Why: fmt.Sprintf("%s relays %s to %s, the target of the move", e.cfg.Node, env.Type, target)}))
	return []kafka.Message{{Topic: events.TopicOpcodes, Event: ev}}
}

// notifyTarget appends targetNotice, retrying until it is in the log or
// ctx ends.
func (e *Executor) notifyTarget(ctx context.Context, target string, env events.Envelope) error {
	msgs := e.targetNotice(target, env)
	if len(msgs) == 0 {
		return nil
	}
	return e.appendHard(ctx, msgs)
}
