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
//   - Readers read committed data only, and keep no position of their own:
//     each caller stores the position after a batch where the batch's
//     effects are, so a crash neither loses nor repeats an effect it
//     recorded (the projector's offsets in Postgres, an executor's
//     Checkpoint that never passes work still owed). A record that does
//     not decode fails Batch.Decode; skipping is a caller's decision.
//   - There is one way to read the log, Reader (read.go): given partitions
//     (or the partitions given keys land in, PartitionOf) from given
//     positions, read-committed, up to the end each partition had when it
//     opened, then optionally on (Follow), in batches that carry the
//     position after them. Callers keep their positions where their effects
//     live (the projector in Postgres, an executor in its Checkpoint).
//     ReadAll is a Reader that stops at the end: every committed event from
//     the start of the log, in offset order per partition.
//   - Every client is made by NewClient, so all are secured and sized
//     alike; no package outside this one imports franz-go's client (kgo) or admin
//     (kadm) (deps_test.go).
//   - Retrying is done one way everywhere: events/retry's Backoff.Do
//     (tries, a first wait doubling up to a cap, a predicate for what is
//     worth retrying; IsRetryable is this package's). The executor's
//     driver steps, appends and reads, the planner service's appends and
//     the supervisor's restarts all use it.
//
// franz-go's errors are translated into this package's sentinel errors
// (errors.go) where a caller can act on the difference.
package kafka
