package verify

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/drovehq/drove/events"
)

// Invariant names one promise of the log; each violation names the one it
// breaks.
type Invariant string

const (
	// Decoding: an event whose payload does not decode cannot be checked.
	Decoding Invariant = "decoding"
	// Placement: an instance is on one node at a time.
	Placement Invariant = "placement"
	// Once: an opcode or a migration phase runs at most once.
	Once Invariant = "once"
	// Dependencies: a job runs only after its dependencies ended as it
	// accepts, and only as planned.
	Dependencies Invariant = "dependencies"
	// Capacity: no node is planned or placed over its memory or disk.
	Capacity Invariant = "capacity"
	// Requests: every request ends, and its result is true.
	Requests Invariant = "requests"
	// Migrations: a migration's record agrees with its phases.
	Migrations Invariant = "migrations"
	// Fencing: a node the planner declared lost starts and finishes
	// nothing until it is brought online (fencing.go).
	Fencing Invariant = "fencing"
)

// Invariants lists every invariant in report order.
func Invariants() []Invariant {
	return []Invariant{Decoding, Placement, Once, Dependencies, Capacity, Requests, Migrations, Fencing}
}

// Record is one event as it was read from the log.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Event     events.Envelope
}

// Ref points at one event of the log.
type Ref struct {
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Time      time.Time `json:"time"`
}

func (r Ref) String() string {
	return fmt.Sprintf("%s %s/%d@%d id %s", r.Type, r.Topic, r.Partition, r.Offset, r.ID)
}

// Violation is one broken promise, with the events that show it.
type Violation struct {
	Invariant Invariant `json:"invariant"`
	Message   string    `json:"message"`
	Events    []Ref     `json:"events"`
}

// Counts says how much was checked, so that a clean report over nothing
// reads as what it is.
type Counts struct {
	Events       int `json:"events"`
	Duplicates   int `json:"duplicates"` // an event id read again (at-least-once delivery)
	Instances    int `json:"instances"`
	Placements   int `json:"placements"`
	Moves        int `json:"moves"` // opcode moves whose node statuses were checked
	Opcodes      int `json:"opcodes"`
	Restarts     int `json:"restarts"` // opcode starts after the first, before its end
	Jobs         int `json:"jobs"`
	Releases     int `json:"releases"`
	Dependencies int `json:"dependencies"`
	Plans        int `json:"plans"`
	NodeChecks   int `json:"node_checks"` // node capacity checks (plans and placements)
	Requests     int `json:"requests"`
	Finished     int `json:"finished"`
	Rejected     int `json:"rejected"`
	AwaitingApp  int `json:"awaiting_approval"` // dry runs nobody approved: nothing runs
	Open         int `json:"open"`              // requests not ended (violations unless allowed)
	Migrations   int `json:"migrations"`
	Phases       int `json:"phases"`
	Lost         int `json:"lost"` // times the planner declared a node lost
}

// Report is the outcome of a check.
type Report struct {
	OK         bool        `json:"ok"`
	Counts     Counts      `json:"counts"`
	Violations []Violation `json:"violations"`
	// Failed lists the invariants with at least one violation.
	Failed []Invariant `json:"failed"`
	// OperatorAction lists what is not a violation but needs a person:
	// moves that ended on a node after the planner declared it lost, past
	// their point of no return when it was cut off (fencing.go).
	OperatorAction []Violation `json:"operator_action"`
}

// add records a violation.
func (r *Report) add(inv Invariant, refs []Ref, format string, args ...any) {
	r.Violations = append(r.Violations, Violation{Invariant: inv, Message: fmt.Sprintf(format, args...), Events: refs})
}

// close sets OK and Failed from the violations.
func (r *Report) close() {
	if r.Violations == nil {
		r.Violations = []Violation{}
	}
	if r.OperatorAction == nil {
		r.OperatorAction = []Violation{}
	}
	r.Failed = []Invariant{}
	for _, inv := range Invariants() {
		if slices.ContainsFunc(r.Violations, func(v Violation) bool { return v.Invariant == inv }) {
			r.Failed = append(r.Failed, inv)
		}
	}
	r.OK = len(r.Violations) == 0
}

// WriteText writes the report for a person: what was checked, then every
// violation with the events involved.
func (r *Report) WriteText(w io.Writer) error {
	c := r.Counts
	var b strings.Builder
	fmt.Fprintf(&b, "checked %d events (%d duplicate deliveries ignored)\n", c.Events, c.Duplicates)
	fmt.Fprintf(&b, "  placement     %d instances, %d placements, %d moves' node statuses\n", c.Instances, c.Placements, c.Moves)
	fmt.Fprintf(&b, "  once          %d opcodes (%d restarted before their end), %d migration phases\n", c.Opcodes, c.Restarts, c.Phases)
	fmt.Fprintf(&b, "  dependencies  %d jobs, %d releases, %d dependencies\n", c.Jobs, c.Releases, c.Dependencies)
	fmt.Fprintf(&b, "  capacity      %d plans, %d node checks\n", c.Plans, c.NodeChecks)
	fmt.Fprintf(&b, "  requests      %d requests: %d finished, %d rejected, %d dry runs awaiting approval, %d open\n",
		c.Requests, c.Finished, c.Rejected, c.AwaitingApp, c.Open)
	fmt.Fprintf(&b, "  migrations    %d migrations\n", c.Migrations)
	fmt.Fprintf(&b, "  fencing       %d nodes declared lost, %d moves ended on them past their point of no return\n",
		c.Lost, len(r.OperatorAction))
	for _, v := range r.OperatorAction {
		fmt.Fprintf(&b, "- [operator action] %s\n", v.Message)
		for _, e := range v.Events {
			fmt.Fprintf(&b, "    %s\n", e)
		}
	}
	if r.OK {
		b.WriteString("OK: every invariant holds\n")
	} else {
		fmt.Fprintf(&b, "FAILED: %d violations of %s\n", len(r.Violations), joinInv(r.Failed))
		for _, v := range r.Violations {
			fmt.Fprintf(&b, "- [%s] %s\n", v.Invariant, v.Message)
			for _, e := range v.Events {
				fmt.Fprintf(&b, "    %s\n", e)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func joinInv(in []Invariant) string {
	s := make([]string, len(in))
	for i, v := range in {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}
