package progress

import (
	"github.com/drovehq/drove/gateway/wire"
)

// Migration is a migration's watch stream folded into RFD 34's steps, one
// per phase run: the one fold behind `drove migrate --watch`'s table
// (cmd/drove/termview) and the console's (the gateway sends its steps
// with ?rows=steps).
type Migration struct {
	Migration string
	Steps     []*wire.MigrationStep // in the order they started
	// Ended says the last line ended a step (the stream ends after a
	// final phase or a pause).
	Ended bool
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
	case "cancel":
		return "canceled: the source node was declared lost"
	}
	return phase
}

// Apply folds one line in and returns the step it changed.
func (m *Migration) Apply(ev wire.MigrationLine) *wire.MigrationStep {
	m.Migration = ev.Migration
	var st *wire.MigrationStep
	for _, s := range m.Steps {
		if s.Index == ev.Index {
			st = s
		}
	}
	if st == nil {
		st = &wire.MigrationStep{Index: ev.Index, Phase: ev.Phase, Label: StepLabel(ev.Phase), State: "running", Started: ev.Time}
		if ev.Started != nil {
			st.Started = *ev.Started
		}
		m.Steps = append(m.Steps, st)
	}
	defer func() { st.Percent = stepPercent(st) }()
	if ev.Total != nil && *ev.Total > 0 {
		st.Current, st.Total = 0, *ev.Total
		if ev.Current != nil {
			st.Current = *ev.Current
		}
	}
	st.Rate, st.ETA = ev.Rate, ev.ETA
	if ev.Message != "" {
		st.Message = ev.Message
	}
	m.Ended = ev.Type == "end"
	if !m.Ended {
		return st
	}
	ended := ev.Time
	st.State, st.Ended, st.ETA = ev.State, &ended, 0
	if ev.Error != "" {
		st.Message = ev.Error
	}
	if st.State == "successful" && st.Total > 0 {
		st.Current = st.Total
	}
	return st
}

// stepPercent is how far a step is, from bytes; 100 only when it
// succeeded, so a step short of its end never shows 100.
func stepPercent(s *wire.MigrationStep) float64 {
	switch {
	case s.State == "successful":
		return 100
	case s.Total > 0:
		return min(99.9, 100*float64(min(s.Current, s.Total))/float64(s.Total))
	}
	return 0
}
