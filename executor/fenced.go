package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// ErrProducerFenced ends Run when the log fences the node's producer. A
// newer producer may have taken the node's transactional id, but so may
// the broker, bumping the epoch past a transaction it expired (a
// partition longer than the transaction timeout), or a client this
// producer abandoned whose request reached the broker late. Every append
// would fail from then on and the node would stay lost; Run ends instead,
// so that its supervisor starts the executor afresh with a new producer.
// It is not permanent: if another executor of the same node fenced this
// one, the two take turns, each turn logged — two executors for one node
// are a misconfiguration to fix, a dead one is not.
var ErrProducerFenced = errors.New("executor: the log fenced this node's producer; start afresh")

// append appends evs to topic in one transaction (see appendBatch).
func (e *Executor) append(ctx context.Context, topic string, evs ...events.Envelope) error {
	msgs := make([]kafka.Message, len(evs))
	for i, ev := range evs {
		msgs[i] = kafka.Message{Topic: topic, Event: ev}
	}
	return e.appendBatch(ctx, msgs...)
}

// appendBatch appends msgs in one transaction; when the producer was
// fenced it ends Run with ErrProducerFenced as well.
func (e *Executor) appendBatch(ctx context.Context, msgs ...kafka.Message) error {
	err := e.prod.AppendBatch(ctx, msgs...)
	if errors.Is(err, kafka.ErrFenced) {
		e.mu.Lock()
		halt := e.halt
		e.mu.Unlock()
		if halt != nil {
			// errShutdown too: the opcodes under way stop without
			// ending, and the next start runs them again.
			halt(fmt.Errorf("%w: %w: %v", errShutdown, ErrProducerFenced, err))
		}
	}
	return err
}
