package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
)

// Driver carries out opcodes on real (or simulated) storage and runtimes.
// The executor owns everything Kafka: it decides when an opcode runs,
// retries transient faults, forwards progress and writes the outcome; the
// driver only moves the instance.
//
// Run moves op.Instance as op says, in RFD 34's phases (events.PhaseBegin,
// PhaseSync, PhaseSwitch; drivers may name finer steps in Progress.Message)
// and reports how far it got through report. Its contract:
//
//   - Success means the instance now runs (or, if it was stopped, sits) on
//     its new placement: for migrate and failover op.To is the primary,
//     for replace-disks op.To holds the new replica and the old one is gone.
//   - A cancelled ctx means abort: roll back so the source is as it was and
//     return an error wrapping ErrCanceled. Past the point of no return
//     (the instance already started on the target) a driver finishes and
//     succeeds instead, and says so in the Result.
//   - Failures are classified: Transient (the executor calls Run again with
//     op.Attempt+1, and a driver that can resume a send should), or Fatal
//     (the driver rolled back; the opcode ends with status error). Errors
//     not classified count as fatal.
//   - Run must tolerate being called again for an opcode it already ran,
//     in whole or in part, before a crash: when the instance already sits
//     at the target it succeeds at once, and it cleans up leftovers of an
//     earlier attempt (a half-received dataset) before starting over.
//   - Progress is cumulative over one call: Current never decreases and
//     ends equal to Total; Total may grow (RFD 34's incremental re-syncs
//     add the bytes dirtied meanwhile), never shrink.
//
// A ZFS storage driver maps the phases onto snapshots (@migrate-snap-N),
// a full `zfs send` and `zfs send -I` incrementals, and a QEMU runtime adds
// memory pre-copy and the handover to the switch phase; both can be one
// Driver or a composite of the two.
type Driver interface {
	Run(ctx context.Context, op Op, report func(Progress)) (Result, error)
}

// Op is one opcode as a driver sees it: what to do, to which instance,
// from where to where, with the instance's facts taken from the inventory.
type Op struct {
	// Request, Job and Index identify the opcode; Key joins them. Drivers
	// use Key to name what they create (snapshots, reservations) so a
	// second attempt finds the first attempt's leftovers.
	Request string
	Job     int
	Index   int

	// Kind is the opcode: migrate, failover or replace-disks.
	Kind events.OpID
	// Mode is the opcode's mode (replace-disks: replace_new_secondary;
	// migrate: live or non-live), as dispatched.
	Mode string
	// AllowFailover lets a migrate fall back to a failover where the
	// runtime cannot hand over a running instance.
	AllowFailover bool

	// Instance and its facts from the inventory.
	Instance string
	Size     events.Size
	Storage  events.StorageKind
	RunState events.RunState

	// From and To are the nodes the opcode moves the instance (migrate,
	// failover) or its replica (replace-disks) from and to.
	From string
	To   string
	// Primary and Secondary are the instance's placement before the
	// opcode; Secondary is empty for storage without a replica.
	Primary   string
	Secondary string

	// Attempt counts calls of Run for this opcode in this executor, from 1.
	Attempt int

	// AwaitReceiver, set by the executor for drivers that implement
	// Receiver, waits for the target side to say where it listens.
	AwaitReceiver func(ctx context.Context) (string, error)
	// SendBytesPerSecond caps the send rate; 0 means no cap.
	SendBytesPerSecond int64
	// ListenAddr, set on the target side (Receive), is where the receiver
	// should listen: Config.ListenAddr, "host:port", port 0 for any.
	ListenAddr string
	// Status, set by the executor, reports a node's status of the
	// instance in the middle of a move (oVirt's model): the source
	// "paused" once a live migration switched to post-copy, when the
	// move can no longer be cancelled. The executor writes the statuses
	// at start and end itself. Nil means nobody listens.
	Status func(node string, status events.NodeMoveStatus)
}

// Key names the opcode uniquely: request/job/index.
func (o Op) Key() string { return fmt.Sprintf("%s/%d/%d", o.Request, o.Job, o.Index) }

// ShortKind is the opcode kind as fault specs and metrics spell it:
// "migrate", "failover" or "replace-disks".
func (o Op) ShortKind() string { return ShortKind(o.Kind) }

// ShortKind spells an opcode id as fault specs and metric labels do.
func ShortKind(k events.OpID) string {
	switch k {
	case events.OpInstanceMigrate:
		return "migrate"
	case events.OpInstanceFailover:
		return "failover"
	case events.OpInstanceReplaceDisks:
		return "replace-disks"
	}
	return string(k)
}

// Progress is one report from a driver: RFD 34's progress event without
// the identity fields the executor adds.
type Progress struct {
	// Phase is the RFD 34 phase (begin, sync, switch).
	Phase string
	// State is the progress state; empty means running.
	State events.ProgressState
	// Current and Total are cumulative over the call, in the driver's unit
	// (bytes for anything that copies data).
	Current int64
	Total   int64
	// BytesPerSecond is the current transfer rate, 0 when nothing flows.
	BytesPerSecond int64
	// ETA is the estimated time left; 0 when unknown.
	ETA time.Duration
	// Message says what is happening, for the operator.
	Message string
}

// Result is what a successful Run reports about the move.
type Result struct {
	// Syncs is the number of sync passes (full send plus incrementals).
	Syncs int
	// Bytes is what was sent over the wire.
	Bytes int64
	// Downtime is how long the instance did not run.
	Downtime time.Duration
	// Message sums the move up for the End event.
	Message string
}

// Receiver is implemented by drivers whose moves need work on the target
// node too: a `zfs receive`, an incoming QEMU. The executor of the target
// node (an opcode's To) calls Receive for each opcode dispatched to the
// source, concurrently with the source's Run; the two flows meet by the
// opcode's Key and either may start first (KubeVirt's decentralised
// migration). Receive calls listening(addr) once it listens; the executor
// appends an events.ReceiverReady with addr, and the source's Run learns
// it through Op.AwaitReceiver. Receive returns when the move is complete
// on its side, or with an error; a cancelled ctx means abort and clean up
// what was received. Drivers without target-side work do not implement it.
type Receiver interface {
	Receive(ctx context.Context, op Op, listening func(addr string), report func(Progress)) error
}

// Migrator is implemented by drivers that run a move one RFD 34 phase at a
// time, for per-instance migrations controlled by their owner or an
// operator: begin reserves the target and notes the instance's prior run
// state; each sync takes snapshot N and sends it (full the first time,
// incremental after); switch stops the instance (or hands it over live),
// sends the final delta and starts it on the target, keeping the source
// copy; abort (before switch) returns everything to the source's prior
// state; rollback (after switch, before finalize) moves the instance back,
// sending only what changed since the switch; finalize drops the source
// copy and the migration snapshots. Every method is idempotent for one
// (migration, phase seq): called again after a crash it finishes or
// reports what was done.
type Migrator interface {
	Phase(ctx context.Context, m MigrationPhase, report func(Progress)) (PhaseResult, error)
	// Estimate returns what a migration of the instance would cost now.
	Estimate(ctx context.Context, m MigrationPhase) (Estimate, error)
}

// MigrationPhase is one phase of a per-instance migration, as dispatched.
type MigrationPhase struct {
	Migration string
	Seq       int
	Phase     string // begin, sync, switch, abort, rollback, finalize
	Sync      int    // sync pass number, from 1
	Instance  string
	Size      events.Size
	Storage   events.StorageKind
	RunState  events.RunState
	Source    string
	Target    string
	// SendBytesPerSecond caps the send rate; 0 means no cap. The executor
	// may change it while a phase runs (settings apply within seconds):
	// drivers read it through CurrentRate when set.
	SendBytesPerSecond int64
	CurrentRate        func() int64
	// MaxDowntime is the migration's downtime budget (switch only; 0 for
	// none): a live switch plans its pause within it.
	MaxDowntime time.Duration
	// AwaitReceiver, when set, waits for the target side's address.
	AwaitReceiver func(ctx context.Context) (string, error)
	// Status, when set, reports a node's status of the instance (oVirt's
	// model) as a MoveStatusReported of the migration: a live move says
	// source "migration source" and target "migration destination" once
	// the incoming VM listens, then down/up at the switch, or up/down
	// after a failed or aborted pre-copy, and "paused" in post-copy.
	Status func(node string, status events.NodeMoveStatus)
}

// Op is the Op both sides of every phase of the migration work with: one
// key for the whole migration (Request the migration, Index 0; see
// MigrationPhaseOf), Mode naming the phase, From the source, To the
// target.
func (m MigrationPhase) Op() Op {
	return Op{Request: m.Migration, Kind: events.OpInstanceMigrate, Mode: MigrationModePrefix + m.Phase,
		Instance: m.Instance, Size: m.Size, Storage: m.Storage, RunState: m.RunState,
		From: m.Source, To: m.Target, Primary: m.Source, Attempt: 1, AwaitReceiver: m.AwaitReceiver}
}

// PhaseResult is what a phase did.
type PhaseResult struct {
	Bytes    int64         // sent in this phase
	Downtime time.Duration // switch: how long the instance did not run
	// WorkloadDowntime is the switch's downtime as the instance's own
	// workload saw it: the gap in its timeline from its last write on the
	// source to its first on the target, read on the target after the
	// move; 0 when the workload keeps no timeline.
	WorkloadDowntime time.Duration
	// Overhead is the part of Downtime that was not the final delta's
	// bytes at the link's rate or its check (the stop and the start, the
	// final send's setup; a live pause's device state), for later moves'
	// predictions (planner/downtime); 0 when the driver does not split it.
	// Of the workload's downtime when that was the longer.
	Overhead time.Duration
	// AtSwitchPoint says a sync left the instance stopped at the switch
	// point (a live pre-copy with nothing left dirty): it is down from
	// here until the switch.
	AtSwitchPoint bool
	Message       string
}

// Estimate is RFD 34's estimate of a migration: how long, how long down,
// how many bytes, and how that was worked out.
type Estimate struct {
	TotalSeconds    float64
	DowntimeSeconds float64
	Bytes           int64
	How             string
}
