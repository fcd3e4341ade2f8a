package termview

import (
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/progress"
	"github.com/drovehq/drove/gateway/wire"
)

// MigrationView draws a migration watch stream, folded into RFD 34's
// steps by gateway/progress, as the live table of `drove migrate
// --watch`: one row per step with a check mark when done, a progress bar,
// bytes, rate, ETA and duration.
type MigrationView struct {
	fold progress.Migration
}

// Apply folds one event in.
func (v *MigrationView) Apply(ev wire.MigrationLine) { v.fold.Apply(ev) }

// stepMark is a step's check box: ✓ done, ✗ failed, ☐ under way.
func stepMark(s *wire.MigrationStep) string {
	switch s.State {
	case "running":
		return "☐"
	case "successful", "paused":
		return "✓"
	}
	return "✗"
}

// Table renders the steps and a total row, at the time now (durations of
// steps still running count to now).
func (v *MigrationView) Table(now time.Time) []string {
	var rows [][]string
	var moved int64
	var first time.Time
	for _, s := range v.fold.Steps {
		if first.IsZero() || s.Started.Before(first) {
			first = s.Started
		}
		end := now
		if s.Ended != nil {
			end = *s.Ended
		}
		bytes := ""
		if s.Total > 1 { // begin and the like count 0 to 1, not bytes
			bytes = events.FormatBytes(min(s.Current, s.Total)) + " / " + events.FormatBytes(s.Total)
			moved += min(s.Current, s.Total)
		}
		note := s.State
		if s.Message != "" && s.State != "running" && s.State != "successful" {
			note += ": " + s.Message
		}
		rows = append(rows, []string{stepMark(s), s.Label, Bar(s.Percent, 20), fmt.Sprintf("%.0f%%", s.Percent),
			bytes, Rate(s.Rate), Duration(time.Duration(s.ETA) * time.Millisecond), Duration(end.Sub(s.Started)), note})
	}
	steps := v.fold.Steps
	state := "running"
	if n := len(steps); n > 0 && v.fold.Ended {
		state = steps[n-1].State
	}
	took := time.Duration(0)
	if !first.IsZero() {
		took = now.Sub(first)
		if last := steps[len(steps)-1]; v.fold.Ended {
			// An end line for an earlier step while the last still runs
			// leaves the time taken unknown (drawn empty).
			took = -1
			if last.Ended != nil {
				took = last.Ended.Sub(first)
			}
		}
	}
	total := []string{"", "total", "", "", "", "", "", Duration(took), state}
	if moved > 0 {
		total[4] = events.FormatBytes(moved) + " sent"
	}
	rows = append(rows, total)
	return Table([]string{"", "STEP", "PROGRESS", ">%", ">BYTES", ">RATE", ">ETA", ">TOOK", "STATE"}, rows)
}
