// Package kafka writes Drove's events to Kafka and reads them back, over
// franz-go. It knows nothing of event meanings: topics, types and the codec
// belong to package events; this package only moves envelopes.
//
// Its invariants:
//
//   - Appends are transactional. A Producer writes several events in one
//     Kafka transaction, so read-committed readers see all of them or none;
//     a failed append is aborted and never becomes visible. Producers are
//     idempotent, so a retried send does not duplicate a record.
//   - Consumers read committed data only, and commit a record's offset only
//     after its handler returned nil: the effect is durable before the log
//     forgets it is pending. Delivery is therefore at least once, and
//     handlers must be idempotent (deduplicate on the event id).
//   - A handler error, or a record that does not decode, stops the consumer
//     and is returned; the record stays uncommitted and is the first one the
//     group sees next time. Skipping is a decision for middleware (see
//     Retry), never a default.
//   - There is one way to read the log, Reader (read.go): given partitions
//     (or the partitions given keys land in, PartitionOf) from given
//     positions, read-committed, up to the end each partition had when it
//     opened, then optionally on (Follow), in batches that carry the
//     position after them. Callers keep their positions where their effects
//     live (the projector in Postgres, an executor in its Checkpoint).
//     ReadAll is a Reader that stops at the end: every committed event from
//     the start of the log, in offset order per partition.
//   - Every client is made by NewClient, so all are secured and sized
//     alike; no package outside this one imports franz-go (deps_test.go).
//   - Retrying is done one way everywhere: Backoff.Do (tries, a first wait
//     doubling up to a cap, a predicate for what is worth retrying). The
//     Retry middleware, the executor's driver steps and appends, and the
//     planner service's appends all use it.
//
// franz-go's errors are translated into this package's sentinel errors
// (errors.go) where a caller can act on the difference.
package kafka
