package system

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"

	"github.com/drovehq/drove/test/bench/cli"
)

// test/bench/results/downtime.json (issue 30): for each kind of move the
// benches make through the system (zfs_offline, zfs_live, shared_live),
// the downtime the workload saw, the one Drove reported, and the one
// action=estimate predicted before the move. A kind's top-level figures
// are its last move's, predicted with what its earlier moves measured;
// every move is listed. Each bench writes its own kinds and keeps the
// others' (the zfs and live benches run apart).

// MoveDowntime is one move's three downtimes, in milliseconds. A nil
// WorkloadMS is a move whose workload kept no timeline to read it from.
type MoveDowntime struct {
	Migration   string `json:"migration"`
	From        string `json:"from"`
	To          string `json:"to"`
	WorkloadMS  *int64 `json:"workload_ms"`
	ReportedMS  int64  `json:"reported_ms"`
	PredictedMS int64  `json:"predicted_ms"`
	// (predicted - measured) / measured, in percent, against each figure
	OffWorkloadPct *float64 `json:"predicted_off_workload_pct"`
	OffReportedPct *float64 `json:"predicted_off_reported_pct"`
	PredictedHow   string   `json:"predicted_how"`
}

// KindDowntime is one kind of move's entry: its last move, and all.
type KindDowntime struct {
	MoveDowntime
	Moves []MoveDowntime `json:"moves"`
}

// Downtimes is the figures of moves, in the order they were made.
func Downtimes(moves ...*Move) KindDowntime {
	var k KindDowntime
	for _, m := range moves {
		d := MoveDowntime{Migration: m.ID, From: m.Source, To: m.Target, ReportedMS: max(Downtime(m.InstanceMigration), 0),
			PredictedMS: int64(math.Round(m.Predicted.DowntimeSeconds * 1000)), PredictedHow: m.Predicted.How}
		if m.WorkloadDowntimeMS > 0 {
			w := m.WorkloadDowntimeMS
			d.WorkloadMS = &w
			d.OffWorkloadPct = offPct(d.PredictedMS, w)
		}
		d.OffReportedPct = offPct(d.PredictedMS, d.ReportedMS)
		k.Moves = append(k.Moves, d)
	}
	if len(k.Moves) > 0 {
		k.MoveDowntime = k.Moves[len(k.Moves)-1]
	}
	return k
}

// offPct is how far predicted is from measured, in percent of measured;
// nil when nothing was measured.
func offPct(predicted, measured int64) *float64 {
	if measured <= 0 {
		return nil
	}
	off := math.Round(float64(predicted-measured)/float64(measured)*1000) / 10
	return &off
}

// WriteDowntime sets kind's entry in the downtime file at path, keeping
// the other kinds it holds.
func WriteDowntime(path, kind string, d KindDowntime) error {
	all := map[string]json.RawMessage{}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(b, &all); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	v, err := json.Marshal(d)
	if err != nil {
		return err
	}
	all[kind] = v
	return cli.WriteJSON(path, all)
}

// PrintDowntimes prints d's moves as a table's rows.
func PrintDowntimes(kind string, d KindDowntime) {
	for _, m := range d.Moves {
		w := "-"
		if m.WorkloadMS != nil {
			w = fmt.Sprint(*m.WorkloadMS)
		}
		fmt.Printf("%-12s %s -> %-8s workload %6s ms, reported %6d ms, predicted %6d ms (%s)\n",
			kind, m.From, m.To, w, m.ReportedMS, m.PredictedMS, m.PredictedHow)
	}
}
