package projector

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A batch's effects are sent to Postgres as few statements as possible:
// statements of one kind that touch different rows are merged into one
// multi-row INSERT (VALUES (...), (...), ...), which costs Postgres one
// statement's overhead instead of one per row. Merging moves statements
// past others, so it is done only where that changes nothing:
//
//   - each kind declares its footprint, the table and the key columns of
//     the one row it writes (footprints below); two statements conflict when
//     they write the same row, and a kind without a footprint (a plan's
//     statements, which write many jobs) conflicts with every statement;
//   - each statement goes to the first level after every earlier
//     statement it conflicts with (level), so statements on one row keep
//     their order, and statements of one level commute;
//   - levels run in order; within one, the statements of each kind that can
//     be merged (multiRow) run as one statement per chunk.

// footprint is the row a kind of statement writes: the first keys
// arguments are its key in table.
type footprint struct {
	table string
	keys  int
}

var footprints = map[string]footprint{
	"group_declared": {"groups", 1}, "node_stated": {"nodes", 1}, "node_heartbeat": {"nodes", 1},
	"instance_declared": {"instances", 1}, "instance_placed": {"instances", 1},
	"evacuation_requested": {"requests", 1}, "group_change_requested": {"requests", 1},
	"request_approved": {"requests", 1}, "request_cancelled": {"requests", 1},
	"request_rejected": {"requests", 1}, "request_finished": {"requests", 1},
	"job_released": {"jobs", 2}, "job_cancelled": {"jobs", 2}, "job_ended": {"jobs", 2},
	"opcode_dispatched": {"opcodes", 3}, "opcode_started": {"opcodes", 3},
	"opcode_cancelled": {"opcodes", 3}, "opcode_ended": {"opcodes", 3},
	"move_dispatched": {"moves", 1}, "move_started": {"moves", 1}, "move_ended": {"moves", 1},
	"move_progress": {"moves", 1}, "move_end": {"moves", 1},
	"migration_asked": {"moves", 1}, "migration_recorded": {"moves", 1},
	"sync_seen": {"move_syncs", 2}, "move_status": {"move_status", 3},
	"migration_phase_dispatched": {"migration_phases", 2}, "migration_phase_ended": {"migration_phases", 2},
	"settings_changed": {"settings", 0},
}

// rowKey is the row s writes, and false for a statement that may write
// any row.
func rowKey(s stmt) (string, bool) {
	fp, ok := footprints[s.name]
	if !ok || len(s.args) < fp.keys {
		return "", false
	}
	var b strings.Builder
	b.WriteString(fp.table)
	for _, a := range s.args[:fp.keys] {
		b.WriteByte(0)
		fmt.Fprint(&b, a)
	}
	return b.String(), true
}

// levels groups sts into levels, in order: every statement comes after
// each earlier one that writes its row, or after all earlier ones if it
// has no footprint; statements of one level write different rows.
func levels(sts []stmt) [][]stmt {
	var out [][]stmt
	last := map[string]int{} // row -> level of its latest statement
	floor := 0               // the levels below it are closed: a statement with no footprint ends them
	for _, s := range sts {
		k, ok := rowKey(s)
		lvl := len(out) // no footprint: after everything so far
		if ok {
			lvl = floor
			if l, seen := last[k]; seen {
				lvl = max(lvl, l+1)
			}
		}
		for lvl >= len(out) {
			out = append(out, nil)
		}
		out[lvl] = append(out[lvl], s)
		if ok {
			last[k] = lvl
		} else {
			floor = lvl + 1
		}
	}
	return out
}

// queueEffects queues sts on b, level by level, each level's mergeable
// statements of one kind merged.
func queueEffects(b *stmtQueue, sts []stmt) {
	for _, lvl := range levels(sts) {
		var kinds []string
		byKind := map[string][]stmt{}
		for _, s := range lvl {
			if _, ok := byKind[s.name]; !ok {
				kinds = append(kinds, s.name)
			}
			byKind[s.name] = append(byKind[s.name], s)
		}
		for _, k := range kinds {
			queueKind(b, byKind[k])
		}
	}
}

// queueKind queues statements of one kind, merged in chunks of 64, 32, ...
// rows when the kind allows it: a few fixed sizes keep the prepared
// statements few.
func queueKind(b *stmtQueue, sts []stmt) {
	m := multiRows[sts[0].name]
	for len(sts) > 0 {
		n := 1
		if m != nil {
			for n = maxMerged; n > len(sts); n /= 2 {
			}
		}
		if n == 1 {
			b.Queue(sts[0].sql, sts[0].args...)
			sts = sts[1:]
			continue
		}
		args := make([]any, 0, n*m.params)
		for _, s := range sts[:n] {
			args = append(args, s.args...)
		}
		b.Queue(m.sql[n], args...)
		sts = sts[n:]
	}
}

const maxMerged = 64

// multiRow is the merged forms of a kind: sql[n] inserts n rows.
type multiRow struct {
	params int
	sql    map[int]string
}

var multiRows = buildMultiRows()

var paramRE = regexp.MustCompile(`\$([0-9]+)`)

// buildMultiRows finds the statements that can be merged: an INSERT whose
// parameters all lie in its one VALUES tuple, which is repeated with the
// parameters renumbered.
func buildMultiRows() map[string]*multiRow {
	out := map[string]*multiRow{}
	for name := range footprints {
		sql := stripComments(q(name))
		open := strings.Index(sql, "VALUES (")
		if !strings.HasPrefix(sql, "INSERT") || open < 0 {
			continue
		}
		open += len("VALUES ")
		end := closing(sql, open)
		if end < 0 {
			continue
		}
		tuple := sql[open : end+1]
		if paramRE.MatchString(sql[:open]) || paramRE.MatchString(sql[end+1:]) {
			continue // a parameter outside the tuple: one row per statement
		}
		params := 0
		for _, m := range paramRE.FindAllStringSubmatch(tuple, -1) {
			n, _ := strconv.Atoi(m[1])
			params = max(params, n)
		}
		mr := &multiRow{params: params, sql: map[int]string{}}
		for n := 2; n <= maxMerged; n *= 2 {
			tuples := make([]string, n)
			for i := range n {
				tuples[i] = paramRE.ReplaceAllStringFunc(tuple, func(p string) string {
					k, _ := strconv.Atoi(p[1:])
					return "$" + strconv.Itoa(k+i*params)
				})
			}
			mr.sql[n] = sql[:open] + strings.Join(tuples, ",\n       ") + sql[end+1:]
		}
		out[name] = mr
	}
	return out
}

// closing is the index of the parenthesis that closes the one at open,
// skipping quoted strings; -1 if none.
func closing(s string, open int) int {
	depth, quoted := 0, false
	for i := open; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// stripComments drops the comment lines of a query.
func stripComments(sql string) string {
	var b strings.Builder
	for line := range strings.Lines(sql) {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
		}
	}
	return b.String()
}
