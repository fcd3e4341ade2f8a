package projector

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Most of a fold's Postgres time is writing the log itself: an event_log
// row for every event, its history_subjects rows, and their indexes. Both
// tables are written with COPY, Postgres's cheapest way in: no statement
// per row, no speculative insertion (INSERT ... ON CONFLICT pays one per
// row), no parameter arrays to unnest and sort.
//
// COPY has no ON CONFLICT, so which events are new is settled before
// it. An id met earlier in the batch is a duplicate, found in Go. An id
// logged by an earlier batch is rare (a producer retrying an uncertain
// commit), so the first attempt at a batch assumes there is none: if there
// is, the primary key refuses the COPY, the whole transaction rolls back,
// and the batch is folded again with knownIDs, which reads the batch's ids
// already in event_log (foldDecoded). Either way no row is doubled and no
// effect runs twice. Only one projector writes a schema at a time (the
// advisory lock of Run; Replay and point-in-time folds write schemas of
// their own), so nothing logs an id between that read and the COPY. An
// event's history rows are written only with its event_log row, so a new
// event has none yet.

var (
	eventLogColumns = []string{"id", "topic", "partition", "offset", "type", "version", "time", "key",
		"correlation_id", "causation_id", "producer", "actor", "why", "request_id", "instance", "payload"}
	historyColumns = []string{"kind", "subject", "event_id"}
)

// logRows adds it's event_log row to log and its history rows to hist.
func logRows(it item, log, hist *copyData) {
	r, e := it.rec, it.env
	log.row(len(eventLogColumns))
	log.text(e.ID)
	log.text(r.Topic)
	log.int4(r.Partition)
	log.int8(r.Offset)
	log.text(e.Type)
	log.int4(int32(e.Version))
	log.timestamptz(e.Time)
	for _, s := range []string{e.Key, e.CorrelationID, e.CausationID, e.Producer, e.Reason.Actor,
		e.Reason.Why, requestOf(e), instanceOf(it.p)} {
		log.text(s)
	}
	log.json(e.Payload)
	for _, s := range subjectsOf(e, it.p) {
		hist.row(len(historyColumns))
		hist.text(s.kind)
		hist.text(s.name)
		hist.text(e.ID)
	}
}

// writeLog copies a prepared batch's event_log and history rows in.
func writeLog(ctx context.Context, tx pgx.Tx, p *prepared) error {
	if err := copyIn(ctx, tx, "event_log", eventLogColumns, p.log); err != nil {
		return err
	}
	return copyIn(ctx, tx, "history_subjects", historyColumns, p.history)
}

// knownIDs returns those of the decoded items' ids already in event_log.
// The query is planned at every call, with the ids in hand (an unnamed
// statement): a plan cached while the table was small would scan it whole
// for every id once it is not.
func knownIDs(ctx context.Context, tx pgx.Tx, items []item) (map[string]bool, error) {
	ids := make([]string, 0, len(items))
	for _, it := range items {
		if it.err == nil {
			ids = append(ids, it.env.ID)
		}
	}
	seen := make(map[string]bool, len(ids))
	if len(ids) == 0 {
		return seen, nil
	}
	rows, err := tx.Query(ctx, q("event_log_known"), pgx.QueryExecModeExec, ids)
	if err != nil {
		return nil, err
	}
	var id string
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
		seen[id] = true
		return nil
	})
	return seen, err
}

// duplicateLogged reports whether err is event_log's primary key refusing
// an id already logged.
func duplicateLogged(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "event_log_pkey"
}
