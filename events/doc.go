// Package events is the one schema of Drove: every topic, every event type,
// the envelope that carries them, and the codec that turns them into bytes
// and back. No other Go package names a topic or an event type: they use
// the constants here. The one exception is SQL, which cannot: the
// projector's views store each event's type string in event_log, and the
// gateway's queries (gateway/sql) filter on a few of them ('move.progress',
// 'move.end', 'instance.declared'). Those strings are part of the schema:
// a type is never renamed under the same version.
//
// The event log is Drove's source of truth — views are rebuilt from it and
// past states are explained by it — so this package is deliberately small,
// strict and dependency free (standard library only; the Kafka wiring lives
// in events/kafka). The invariants it keeps:
//
//   - Every event is an [Envelope]: a unique id, a type and schema version,
//     a UTC time, a partition key, the request it belongs to (correlation),
//     the event that caused it (causation), the producer, and a [Reason]
//     trail saying who asked, why, and from which request.
//   - Decoding is strict. An unknown type or an unsupported version is an
//     error, never a silent skip: a consumer that does not understand an
//     event must stop rather than build a view that quietly misses it.
//     Unknown JSON fields and missing required fields are errors too, and
//     payload enums (opcode ids, job statuses, end states, ...) must hold a
//     known value.
//   - Encoding is just as strict: [Encode] refuses an envelope that [Decode]
//     would refuse, so a bad event fails at its producer, not at every
//     consumer that replays it for years afterwards.
//   - A type's schema never changes under the same version. A new shape is a
//     new version registered next to the old one, because the log keeps the
//     old events forever.
//   - The partition key of an event comes from its payload (a request id, a
//     node name, an instance name), so events that must be read in order
//     share a partition no matter who produces them.
package events
