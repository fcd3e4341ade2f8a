// Package projector folds Drove's event log into queryable Postgres views,
// exactly once, and rebuilds them from offset zero to prove they are right.
//
//	if err := projector.ApplySchema(ctx, pool, "drove"); err != nil { ... }
//	p, err := projector.New(projector.Config{Kafka: kcfg, Registerer: reg}, pool)
//	err = p.Run(ctx)                                // until ctx is done
//	rep, err := projector.Replay(ctx, cfg, pool)    // audit: rep.Equal
//
// # Schema
//
// The views are the tables of schema/NNN_*.sql, numbered and embedded,
// applied by ApplySchema in order and recorded in the schema's
// schema_versions table, and the SQL views of schema/views.sql, which hold
// no data and are made again after the numbered files on every
// ApplySchema, in the same transaction. Every query runs with search_path set
// LOCAL to one schema, so the live schema ("drove") and replay schemas
// ("drove_replay_<unix-nanos>") live side by side in one database and share
// one pool. SQL lives in sql/*.sql.
//
// # Exactly once
//
// Kafka delivers at least once; the projector turns that into exactly once
// by keeping its position in the same database as its effects:
//
//   - It reads every topic of events.Topics() with an events/kafka Reader
//     (read committed, no consumer group, no offset commits), from the
//     positions in projector_offsets.next_offset, loaded at every start;
//     that is the only place its position lives.
//   - A batch of records (up to BatchSize, from any partitions, and at
//     most BatchBytes of them: a larger batch is cut into pieces, each with
//     its own offsets, pieces.go) is folded in one Postgres transaction that writes each new event's effects, its
//     event_log row, and the next offset of every partition in the batch.
//     The transaction commits all of it or none of it: a crash before the
//     commit leaves the offsets where they were and the batch is read
//     again; a crash after it leaves the offsets past the batch and it is
//     not. No row is lost and none is doubled.
//   - Control records (transaction markers) advance the offsets too (a
//     Reader batch's Next counts them), so a caught-up projector's
//     next_offset equals the log's end offset.
//   - The same event can be in the log twice (a producer retrying a commit
//     whose outcome it did not know). An event's effects run only in the
//     transaction that adds its event_log row, keyed by its id: a repeat
//     within a batch is skipped, and a batch holding an id logged before
//     is refused by the primary key and folded again, skipping it
//     (eventlog.go). A duplicate is a no-op, even one appended long after
//     its first copy.
//   - One projector writes a schema at a time: Run holds an advisory lock
//     on the very connection it writes through; a second Run waits. If that
//     connection dies, its lock and its open transaction die with it.
//
// # Order, and why replay equals live
//
// Kafka orders records within a partition only, and a projector may read
// partitions of different topics in any interleaving. The views therefore
// follow the rules in schema/001_views.sql:
//
//   - every effect is an upsert keyed by the event's own keys, creating the
//     row with defaults when an event of another topic has not yet;
//   - a table fed by several topics takes disjoint columns from each, so
//     the interleaving of topics does not matter, while within one topic the
//     partition key (request, node or instance) keeps one object's events
//     in order;
//   - values that accumulate are derived, not incremented, or added only by
//     a new event (requests.plans; moves.syncs and last_sync_bytes are
//     derived from move_syncs, one row per sync phase start);
//   - the latest progress of a move, and the latest status a node
//     reported, win by the event's time, not by arrival;
//   - derived states (a request's status, a move's RFD 34 state) are
//     computed in views at read time;
//   - a per-instance migration (schema/003) is a moves row of kind
//     'instance' keyed by its migration id, whose record columns are
//     replaced by each MigrationStateChanged (the coordinator's whole
//     record, in log order on its instance's partition); its phases'
//     progress folds into rows 'id/0/seq' as any move's does, and the
//     instance_migrations view joins the latest of them at read time;
//   - every time stored is an event's time, never the projector's clock.
//
// Within a batch, the effects of events that write the same row are
// coalesced (coalesce.go): a run of one move's progress events, of one
// sync's progress, or of one node's statuses becomes one statement that
// leaves exactly what running each in log order leaves, whatever the row
// held ("newer than progress_time" included, and the last non-empty error
// of the events that would have applied). Every event still gets its
// event_log row. A statement declares what it writes (stmt.key) and, if
// runs of it can merge, the merge rule; a statement that writes the same
// columns of the same row must declare the same key, so a run ends at it
// (a move's End between its progress). Folding a log in batches of 1
// and of 500 gives the same tables, and a test checks it.
//
// The coalesced statements are then merged (batch.go): each kind names the
// row it writes (its footprint: table and key arguments), statements are
// put in levels so that those on one row keep their order and a statement
// of unknown footprint (a plan's) stays between everything before and
// after it, and each level's statements of one kind go as one multi-row
// INSERT when the kind's parameters all sit in its VALUES tuple.
//
// Replay folds the whole log, from each partition's start, into a fresh
// schema with the same code, then compares a checksum per table (row count
// and a hash of the rows: the sums of each row's JSON md5, so the rows
// stream through an aggregate in any order and no value grows with the
// table; event_log.seq, the order one projector happened to read rows in,
// is left out). It first waits, at
// most ReplayWait, for the live projector to reach the log's end, reads the
// live offsets and checksums in one snapshot, and folds up to the larger of
// the end and the live offset: a caught-up live schema is compared with a
// rebuild of exactly what it folded. A live projector still behind is
// reported as such (Report.LiveBehind, Report.Behind), not as a mismatch in
// disguise.
//
// A fold into a fresh schema (Replay, AsOf) drops the indexes the fold
// does not read (all but the primary keys the upserts and the logged-id
// check use; history_subjects' goes too) and builds them after the load
// (bulk.go): one sort per index instead of a B-tree insertion per row. A
// replay schema that is dropped after its checksums (no KeepReplay) is
// never read by index, so its indexes are not built at all.
//
// # Memory
//
// The projector holds at most two pieces of the log decoded and prepared
// (the one in its transaction and the next, readAhead), each at most
// BatchSize records and BatchBytes of record bytes (8 MiB by default;
// what a piece's decoded events, log rows and arguments take is a few
// times its bytes), besides the Kafka client's fetch buffers: so its
// memory does not grow with the log or with the records' sizes.
//
// # History and points in time (issue 15)
//
// Each event's effects include its history rows (history.go): which
// instances, nodes, request and migration it touched, in
// history_subjects, so an auditor reads one subject's story by index.
// AsOf (asof.go) is Replay's fold stopped at a bound: each partition ends
// at its first event record stamped after a time (commit markers never
// end one), or at given offsets; the views land in a schema of their own,
// named after the bound and kept (ListAsOf, DropAsOf), with the bound in
// as_of.
//
// # Records that cannot be folded
//
// Decoding is strict (events.DecodeWithPayload, which is events.Decode
// returning the payload it decoded). A record that does not decode, an
// event on a topic its type does not belong to, or an event whose values
// Postgres refuses (a NUL character) is not skipped silently: it is logged
// at error level, counted in drove_projector_undecodable_events_total, and
// recorded in undecodable_events with its topic, partition, offset, bytes
// and error, in the same transaction as the offset that moves past it. The
// projector then goes on. Stopping instead would freeze every view of every
// request behind one bad record until someone edited the log, which an
// event log does not allow; the record is kept for the operator, and a
// replay records the same row.
//
// # Metrics
//
// drove_projector_events_applied_total{type}, _duplicate_events_total{type},
// _undecodable_events_total{topic}, _lag{topic,partition} (end offset minus
// next_offset), _apply_seconds (one transaction) and _batch_records.
package projector
