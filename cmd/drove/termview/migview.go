package termview

import (
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// MigrationView folds a migration watch stream into RFD 34's steps, for
// the live table of `drove migrate --watch`: one row per step with a check
// mark when done, a progress bar, bytes, rate, ETA and duration.
type MigrationView struct {
	Migration string
	Instance  string
	Steps     []*Step
	// Ended says the last step ended (the stream ends after a final
	// phase or a pause).
	Ended bool
}

// Step is one phase of the migration as the watcher sees it.
type Step struct {
	Index   int
	Phase   string
	State   string // running, or the phase's end state: successful, failed, paused, ...
	Current int64
	Total   int64
	Rate    int64
	ETA     time.Duration
	Started time.Time
	Ended   time.Time
	Message string
}

// StepLabel names a phase as RFD 34's CLI does.
func StepLabel(phase string) string {
	switch phase {
	case "begin":
		return "making a reservation"
	case "sync":
		return "synchronizing filesystems"
	case "switch":
		return "switching instance"
	case "abort":
		return "aborting"
	case "rollback":
		return "rolling back"
	case "finalize":
		return "removing the source copy"
	case "pause":
		return "pausing"
	}
	return phase
}

// Apply folds one event in.
func (v *MigrationView) Apply(ev wire.MigrationLine) {
	v.Migration = ev.Migration
	var st *Step
	for _, s := range v.Steps {
		if s.Index == ev.Index {
			st = s
		}
	}
	if st == nil {
		st = &Step{Index: ev.Index, Phase: ev.Phase, State: "running", Started: ev.Time}
		if ev.Started != nil {
			st.Started = *ev.Started
		}
		v.Steps = append(v.Steps, st)
	}
	if ev.Total != nil && *ev.Total > 0 {
		st.Current, st.Total = 0, *ev.Total
		if ev.Current != nil {
			st.Current = *ev.Current
		}
	}
	st.Rate, st.ETA = ev.Rate, time.Duration(ev.ETA)*time.Millisecond
	if ev.Message != "" {
		st.Message = ev.Message
	}
	if ev.Type == "end" {
		st.State, st.Ended, st.ETA = ev.State, ev.Time, 0
		if ev.Error != "" {
			st.Message = ev.Error
		}
		if st.State == "successful" && st.Total > 0 {
			st.Current = st.Total
		}
		v.Ended = true
		return
	}
	v.Ended = false
}

// Percent is how far the step is, from bytes; 100 when it succeeded.
func (s *Step) Percent() float64 {
	switch {
	case s.State == "successful":
		return 100
	case s.Total > 0:
		return min(99.9, 100*float64(min(s.Current, s.Total))/float64(s.Total))
	}
	return 0
}

// Mark is the step's check box: ✓ done, ✗ failed, ☐ under way.
func (s *Step) Mark() string {
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
	for _, s := range v.Steps {
		if first.IsZero() || s.Started.Before(first) {
			first = s.Started
		}
		end := s.Ended
		if end.IsZero() {
			end = now
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
		rows = append(rows, []string{s.Mark(), StepLabel(s.Phase), Bar(s.Percent(), 20), fmt.Sprintf("%.0f%%", s.Percent()),
			bytes, Rate(s.Rate), Duration(s.ETA), Duration(end.Sub(s.Started)), note})
	}
	state := "running"
	if n := len(v.Steps); n > 0 && v.Ended {
		state = v.Steps[n-1].State
	}
	took := time.Duration(0)
	if !first.IsZero() {
		took = now.Sub(first)
		if v.Ended {
			took = v.Steps[len(v.Steps)-1].Ended.Sub(first)
		}
	}
	total := []string{"", "total", "", "", "", "", "", Duration(took), state}
	if moved > 0 {
		total[4] = events.FormatBytes(moved) + " sent"
	}
	rows = append(rows, total)
	return Table([]string{"", "STEP", "PROGRESS", ">%", ">BYTES", ">RATE", ">ETA", ">TOOK", "STATE"}, rows)
}
