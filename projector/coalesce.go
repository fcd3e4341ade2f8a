package projector

import (
	"strconv"
	"time"
)

// Within a batch, many events often write the same row: a move's progress
// events, one every few seconds, each replace the move's progress
// columns. Running one statement per event makes Postgres find, lock and
// rewrite the row once per event; coalescing a run of them into one
// statement leaves the same row with one write. Every event still gets its
// event_log row; only the effects are coalesced, and only where the merge
// is exact (each merge rule below says why).

// coalesce returns sts with each run of mergeable statements of one kind and
// key merged into one, at the place of the run's first statement. A run ends
// at the next statement of its key that is of another kind (a move's
// End between its Progress events). Moving a later statement of the run up
// past statements of other keys changes nothing, since those commute with
// it; so the batch leaves the views exactly as running every statement in
// order would, with one statement per run instead of one per event. Derive
// markers pass through.
func coalesce(sts []stmt) []stmt {
	out := make([]stmt, 0, len(sts))
	last := map[string]int{} // key -> index in out of its latest statement
	for _, s := range sts {
		if s.key != "" {
			if i, ok := last[s.key]; ok && out[i].merge != nil && out[i].sql == s.sql {
				out[i] = out[i].merge(out[i], s)
				continue
			}
			last[s.key] = len(out)
		}
		out = append(out, s)
	}
	return out
}

// micros is t as Postgres stores it: pgx sends whole microseconds,
// truncated. Merge rules compare times as Postgres will, or two times a few
// nanoseconds apart would be ordered in Go and tied in Postgres.
func micros(t time.Time) int64 { return t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 }

// notBefore reports whether a is at or after b, as Postgres compares them.
func notBefore(a, b time.Time) bool { return micros(a) >= micros(b) }

func progressKey(id string) string { return "moves.progress " + id }

// progressRow is a move_progress statement: one Progress event's, or a
// run of them merged.
type progressRow struct {
	id, request            string
	job, idx               int
	instance, phase, state string
	t                      time.Time
	current, total         int64
	eta                    float64
	bps                    int64
	message                string
	err                    string    // the error to keep, if not empty
	errT                   time.Time // the time of the event err is from
}

// A row statement (progressRow, syncRow, statusRow) carries its typed
// values and gets its arguments only when it is sent (appendSendable),
// after its run is merged: most of a batch is progress merged away, and
// boxing each event's values into arguments was most of what the Go side
// of a batch allocated.
type rowValues interface{ argList() []any }

// appendSendable appends what s sends, with its arguments.
func appendSendable(out []stmt, s stmt) []stmt {
	switch r := s.vals.(type) {
	case progressRow:
		return append(out, r.stmts()...)
	case rowValues:
		s.args = r.argList()
	}
	return append(out, s)
}

func (r progressRow) stmt() stmt {
	return stmt{name: "move_progress", sql: q("move_progress"), key: progressKey(r.id), merge: mergeProgress, vals: r}
}

func (r progressRow) argList() []any {
	return []any{r.id, r.request, r.job, r.idx, r.instance, r.phase, r.state, r.t, r.current,
		r.total, r.eta, r.bps, r.message, r.err}
}

// sendable is r's statement with its arguments.
func (r progressRow) sendable() stmt {
	s := r.stmt()
	s.args = r.argList()
	return s
}

// stmts is what r sends: the one statement, or, when r keeps the error of
// an event before its own (a merged run whose last error is not its last
// event's), that error at its event's time and then r without an error.
// The second applies whenever the first does (its time is not before),
// and keeps the error the first left; the first applies exactly when the
// row is not newer than the error's event, which is when the merged run's
// error would have been kept (mergeProgress). So every statement's
// parameters lie in its VALUES tuple, and the moves' progress of a batch
// goes as one multi-row statement (batch.go) instead of one per move.
func (r progressRow) stmts() []stmt {
	if r.err == "" || micros(r.errT) == micros(r.t) {
		return []stmt{r.sendable()}
	}
	first, rest := r, r
	first.t = r.errT
	rest.err = ""
	return []stmt{first.sendable(), rest.sendable()}
}

// mergeProgress merges two move_progress statements of one move.
// In order, an event applies when its time is not before the row's
// progress_time, which is then its time: the ones that apply are those not
// before every earlier one (the run's records) and not before the row's
// time, a suffix of the records since their times never decrease. So:
//   - the row ends with the fields of the last event of the latest time,
//     if that time is not before the row's (the statement's WHERE);
//   - the error kept is the last non-empty one among the records, if its
//     event applies, that is if its time (errT) is not before the row's;
//     otherwise the row's own error stays (the statement's CASE);
//   - a row the run creates is created by its first event, so its
//     instance is the first event's; the later ones never set it.
func mergeProgress(a, b stmt) stmt {
	x, y := a.vals.(progressRow), b.vals.(progressRow)
	if !notBefore(y.t, x.t) {
		return a // y applies under no row: x's time is later
	}
	out := y
	out.instance = x.instance
	if y.err == "" {
		out.err, out.errT = x.err, x.errT
	}
	return out.stmt()
}

// syncRow is a sync_seen statement.
type syncRow struct {
	id      string
	started time.Time
	bytes   int64
}

func (r syncRow) stmt() stmt {
	return stmt{
		name: "sync_seen", sql: q("sync_seen"),
		key: "move_syncs " + r.id + " " + strconv.FormatInt(micros(r.started), 10),
		merge: func(a, b stmt) stmt {
			x, y := a.vals.(syncRow), b.vals.(syncRow)
			x.bytes = max(x.bytes, y.bytes) // the statement keeps the greatest
			return x.stmt()
		},
		vals: r,
	}
}

func (r syncRow) argList() []any { return []any{r.id, r.started, r.bytes} }

// statusRow is a move_status statement.
type statusRow struct {
	request, instance, node, status string
	t                               time.Time
}

func (r statusRow) stmt() stmt {
	return stmt{
		name: "move_status", sql: q("move_status"),
		key: "move_status " + strconv.Quote(r.request) + " " + strconv.Quote(r.instance) + " " + strconv.Quote(r.node),
		// As with progress, the last report of the latest time wins,
		// if that time is not before the row's.
		merge: func(a, b stmt) stmt {
			if notBefore(b.vals.(statusRow).t, a.vals.(statusRow).t) {
				return b
			}
			return a
		},
		vals: r,
	}
}

func (r statusRow) argList() []any { return []any{r.request, r.instance, r.node, r.status, r.t} }
