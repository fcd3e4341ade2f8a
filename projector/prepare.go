package projector

import (
	"maps"
	"slices"

	"github.com/drovehq/drove/events"
)

// prepared is what a batch writes, worked out before its transaction:
// readAhead prepares the next batch while Postgres folds the current one,
// so the Go side's CPU (building rows and statements) overlaps Postgres's
// instead of adding to it. The transaction only sends it (foldItems).
type prepared struct {
	fresh   []bool   // per item: its event is new, so its row is written and its effects run
	log     []byte   // event_log rows (copyData)
	history []byte   // history_subjects rows (copyData)
	stmts   []queued // the undecodable records' rows, then the effects, in order
}

// queued is one statement to send.
type queued struct {
	sql  string
	args []any
}

// stmtQueue collects statements in order.
type stmtQueue []queued

func (q *stmtQueue) Queue(sql string, args ...any) { *q = append(*q, queued{sql: sql, args: args}) }

// prepare works out the batch's writes. An event is new when its id is
// neither in known (ids already logged; nil when assumed none, see
// eventlog.go) nor earlier in the batch.
func prepare(items []item, known map[string]bool) (*prepared, error) {
	p := &prepared{fresh: make([]bool, len(items))}
	seen := make(map[string]bool, len(items))
	var log, hist copyData
	// An event_log row is its payload and about 300 bytes of other
	// fields; a history row about 70 bytes, two or three an event.
	size := 0
	for _, it := range items {
		size += len(it.rec.Value) + 300
	}
	log.reserve(size)
	hist.reserve(200 * len(items))
	var stmts stmtQueue
	for i, it := range items {
		if it.err != nil {
			stmts.Queue(q("undecodable_insert"), it.rec.Topic, it.rec.Partition, it.rec.Offset,
				it.rec.Key, it.rec.Value, it.err.Error())
			continue
		}
		if events.Compacted(it.rec.Topic) {
			// Heartbeats are current state, not history: no event_log
			// row (the broker keeps only each node's last, so a replay
			// could not equal rows the live fold kept); their effects
			// are idempotent, so each is fresh.
			p.fresh[i] = true
			continue
		}
		if known[it.env.ID] || seen[it.env.ID] {
			continue
		}
		seen[it.env.ID] = true
		p.fresh[i] = true
		logRows(it, &log, &hist)
	}
	if err := queueEffectsOf(&stmts, items, p.fresh); err != nil {
		return nil, err
	}
	p.log, p.history, p.stmts = log.bytes(), hist.bytes(), stmts
	return p, nil
}

// queueEffectsOf queues the effects of the fresh items: coalesced,
// merged, and the derived sync counts last.
func queueEffectsOf(b *stmtQueue, items []item, fresh []bool) error {
	all := make([]stmt, 0, 2*len(items)) // most events have one or two
	for i, it := range items {
		if it.err != nil || !fresh[i] {
			continue
		}
		sts, err := effects(it.env, it.p)
		if err != nil {
			return err
		}
		all = append(all, sts...)
	}
	// Runs of effects on one row become one statement each: most of a
	// batch is progress of a few moves.
	syncs := map[string]bool{} // moves whose syncs to derive
	effs := make([]stmt, 0, len(all))
	for _, s := range coalesce(all) {
		if r, ok := s.vals.(syncRow); ok {
			syncs[r.id] = true
		}
		effs = appendSendable(effs, s)
	}
	// Statements of one kind on different rows become one.
	queueEffects(b, effs)
	// Derived once per batch, after every sync the batch saw: a derived
	// value depends only on the rows it is derived from.
	if len(syncs) > 0 {
		b.Queue(q("syncs_derive"), slices.Sorted(maps.Keys(syncs)))
	}
	return nil
}
