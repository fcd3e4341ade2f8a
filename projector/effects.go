package projector

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
)

// stmt is one SQL statement of an effect.
type stmt struct {
	name string // the query's name in sql/*.sql
	sql  string
	args []any
	// key, when set, names what the statement writes (a row, and the
	// columns of it that statements of its kind write) where the result
	// depends on the order of the statements writing it. Every statement
	// that writes those columns of that row carries the same key; a
	// statement without one commutes with every other of the batch.
	key string
	// merge, when set, coalesces a run of statements of one kind and key
	// within a batch (coalesce): merge(a, b) is one statement that leaves
	// exactly what running a and then b leaves, whatever the row held
	// before. It reads the typed values in vals.
	merge func(a, b stmt) stmt
	vals  any
}

func st(name string, args ...any) stmt { return stmt{name: name, sql: q(name), args: args} }

// effects returns the statements that fold one event into the views. Every
// time written is the event's own (env.Time): the projection has no clock of
// its own, or a replay would differ from the live views.
func effects(env events.Envelope, p events.Payload) ([]stmt, error) {
	for _, topic := range []func(events.Envelope, events.Payload) ([]stmt, bool){
		inventoryEffects, requestEffects, jobEffects, opcodeEffects, progressEffects, migrationEffects,
		checkpointEffects,
		nodeEffects,
	} {
		if out, ok := topic(env, p); ok {
			return out, nil
		}
	}
	// A type events registers but this file does not fold: a build
	// mistake, caught by the test that folds a sample of every type.
	return nil, fmt.Errorf("projector: no effect for %s v%d", env.Type, env.Version)
}

// inventoryEffects folds drove.inventory: groups, nodes, instances and
// placements.
func inventoryEffects(env events.Envelope, p events.Payload) ([]stmt, bool) {
	t := env.Time
	switch e := p.(type) {
	case events.GroupDeclared:
		return []stmt{st("group_declared", e.Name, string(e.AllocPolicy), strs(e.Tags), t)}, true
	case events.NodeAnnounced:
		return []stmt{nodeStated(e, t)}, true
	case events.NodeUpdated:
		return []stmt{nodeStated(events.NodeAnnounced(e), t)}, true
	case events.InstanceDeclared:
		var disk int64
		for _, d := range e.Size.DisksMiB {
			disk += d
		}
		return []stmt{st("instance_declared", e.Name, e.Owner, e.Size.MemoryMiB, e.Size.VCPUs, disk,
			string(e.Storage), string(e.RunState), e.PrimaryNode, e.SecondaryNode, strs(e.Tags),
			e.UserMigration, t, e.MaxDowntimeMS)}, true
	case events.InstancePlaced:
		return []stmt{st("instance_placed", e.Instance, e.Group, e.PrimaryNode, e.SecondaryNode, e.Request, t)}, true
	}
	return nil, false
}

// requestEffects folds drove.requests and drove.plans: a request's story
// and its plans.
func requestEffects(env events.Envelope, p events.Payload) ([]stmt, bool) {
	t := env.Time
	switch e := p.(type) {
	case events.EvacuationRequested:
		return []stmt{st("evacuation_requested", e.Request, strs(e.Nodes), string(e.Mode), e.DryRun,
			e.IgnoreSoftErrors, e.MaxMovesPerNode, env.Reason.Actor, env.Reason.Why, t)}, true
	case events.GroupChangeRequested:
		return []stmt{st("group_change_requested", e.Request, strs(e.Instances), strs(e.TargetGroups),
			env.Reason.Actor, env.Reason.Why, t, e.DryRun)}, true
	case events.RequestApproved:
		return []stmt{st("request_approved", e.Request, t)}, true
	case events.RequestCancelled:
		return []stmt{st("request_cancelled", e.Request, t)}, true
	case events.RequestRejected:
		return []stmt{st("request_rejected", e.Request, t, e.Reason)}, true
	case events.RequestFinished:
		return []stmt{st("request_finished", e.Request, t, jsonArray(e.Moved), jsonArray(e.Failed))}, true

	case events.PlanComputed:
		return planEffects(e, t), true
	}
	return nil, false
}

// planEffects folds a plan, or one part of a plan in parts: the first part
// replaces the request's plan and counts it, later ones extend it, and the
// last drops the jobs of an earlier plan beyond the new plan's. Parts are
// folded one by one, so no batch or offset has to wait for a whole plan.
func planEffects(e events.PlanComputed, t time.Time) []stmt {
	jobs := jsonArray(e.Jobs)
	var out []stmt
	if e.Part == 0 {
		out = append(out,
			st("plan_computed", e.Request, jsonArray(e.Moved), jsonArray(e.Failed), jobs, e.ScoreBefore, e.ScoreAfter, t),
			st("request_planned", e.Request, t))
	} else {
		out = append(out, st("plan_part", e.Request, jsonArray(e.Moved), jsonArray(e.Failed), jobs))
	}
	out = append(out, st("plan_jobs", e.Request, jobs))
	if e.Part == max(e.Parts-1, 0) {
		out = append(out, st("plan_jobs_dropped", e.Request, e.FirstJob+len(e.Jobs)))
	}
	return out
}

// jobEffects folds drove.jobs: each job's fate.
func jobEffects(env events.Envelope, p events.Payload) ([]stmt, bool) {
	t := env.Time
	switch e := p.(type) {
	case events.JobReleased:
		return []stmt{st("job_released", e.Request, e.Job.Index, t)}, true
	case events.JobCancelled:
		return []stmt{st("job_cancelled", e.Request, e.Job, t, e.Reason)}, true
	case events.JobEnded:
		return []stmt{st("job_ended", e.Request, e.Job, t, string(e.Status), e.Error)}, true
	}
	return nil, false
}

// opcodeEffects folds drove.opcodes: each opcode's lifecycle, and the move
// it makes.
func opcodeEffects(env events.Envelope, p events.Payload) ([]stmt, bool) {
	t := env.Time
	switch e := p.(type) {
	case events.OpcodeDispatched:
		id := moveID(e.Request, e.Job, e.Index)
		return []stmt{
			st("opcode_dispatched", e.Request, e.Job, e.Index, e.Node, string(e.Opcode.OpID),
				e.Opcode.Instance, e.Opcode.From, e.Opcode.To, t),
			st("move_dispatched", id, e.Request, e.Job, e.Index, e.Opcode.Instance,
				e.Opcode.From, e.Opcode.To, string(e.Opcode.OpID), t),
		}, true
	case events.OpcodeStarted:
		id := moveID(e.Request, e.Job, e.Index)
		return []stmt{
			st("opcode_started", e.Request, e.Job, e.Index, t),
			st("move_started", id, e.Request, e.Job, e.Index, t),
		}, true
	case events.OpcodeCancelled:
		return []stmt{st("opcode_cancelled", e.Request, e.Job, e.Index, t)}, true
	case events.OpcodeEnded:
		id := moveID(e.Request, e.Job, e.Index)
		return []stmt{
			st("opcode_ended", e.Request, e.Job, e.Index, t, string(e.Status), e.Error),
			st("move_ended", id, e.Request, e.Job, e.Index, t, string(e.Status), e.Error),
		}, true
	}
	return nil, false
}

// progressEffects folds drove.progress — moves' progress and ends, and the
// nodes' statuses — and drove.audit, whose view is the event log itself.
func progressEffects(env events.Envelope, p events.Payload) ([]stmt, bool) {
	t := env.Time
	switch e := p.(type) {
	case events.Progress:
		id := moveID(e.Request, e.Job, e.Index)
		out := []stmt{progressRow{id: id, request: e.Request, job: e.Job, idx: e.Index, instance: e.Instance,
			phase: e.Phase, state: string(e.State), t: t, current: e.Current, total: e.Total, eta: e.ETASeconds,
			bps: e.BytesPerSecond, message: e.Message, err: e.Error, errT: t}.stmt()}
		if e.Phase == events.PhaseSync {
			// A sync phase is known by its start; progress events that
			// do not say when it started count as one sync.
			started := e.Started
			if started.IsZero() {
				started = time.Unix(0, 0).UTC()
			}
			// The move's syncs are derived once the batch's sync
			// rows are in (queueEffectsOf).
			out = append(out, syncRow{id: id, started: started, bytes: max(e.Total, e.Current)}.stmt())
		}
		return out, true
	case events.End:
		id := moveID(e.Request, e.Job, e.Index)
		s := st("move_end", id, e.Request, e.Job, e.Index, e.Instance, e.Phase,
			string(e.State), e.Message, t)
		s.key = progressKey(id) // it writes the progress columns too: a Progress run ends at it
		return []stmt{s}, true
	case events.MoveStatusReported:
		return []stmt{statusRow{request: e.Request, instance: e.Instance, node: e.Node,
			status: string(e.Status), t: t}.stmt()}, true

	case events.AuditRecorded:
		return nil, true
	}
	return nil, false
}

// migrationEffects folds RFD 34's per-instance migrations: drove.migrations,
// drove.settings, and the migration phases and receiver rendezvous on
// drove.opcodes (schema/003).
func migrationEffects(env events.Envelope, p events.Payload) ([]stmt, bool) {
	t := env.Time
	switch e := p.(type) {
	case events.MigrationActionRequested:
		switch e.Action {
		case events.ActionBegin, events.ActionAutomatic, events.ActionSchedule:
			return []stmt{st("migration_asked", e.Migration, e.Instance, t)}, true
		}
		return nil, true // the event log holds the command
	case events.MigrationStateChanged:
		return []stmt{st("migration_recorded", e.Migration, e.Instance, e.Account, string(e.Role), e.Source,
			e.Target, e.Automatic, string(e.State), e.Phase, e.Syncs, e.LastSyncBytes, e.ScheduledAt,
			string(e.PriorRunState), e.Switched, e.Finalized, e.Message, e.Error, e.ErrorDetail, t, e.PhaseRunning,
			e.DowntimeMS, e.WorkloadDowntimeMS, e.PredictedDowntimeMS, e.MaxDowntimeMS)}, true
	case events.MigrationPhaseDispatched:
		return []stmt{st("migration_phase_dispatched", e.Migration, e.Seq, e.Instance, e.Phase, e.Node,
			e.Sync, e.SendMbps, t)}, true
	case events.MigrationPhaseEnded:
		return []stmt{st("migration_phase_ended", e.Migration, e.Seq, e.Instance, e.Phase, e.Node, t,
			string(e.Status), e.Bytes, e.DowntimeMS, e.Error, e.WorkloadDowntimeMS, e.OverheadMS)}, true
	case events.ReceiverReady, events.TargetNotified:
		return nil, true // a rendezvous between executors: the event log is enough
	case events.SettingsChanged:
		return []stmt{st("settings_changed", e.AllowUserMigrations, e.MaxRunningMigrationsPerNode,
			e.SendMbpsLimit, e.ResyncMaxBytes, e.ResyncMaxSyncs, e.ResyncShrinkWindow,
			e.ProgressTimeoutSeconds, e.FinalizeGraceSeconds, t, e.MaxDowntimeMS)}, true
	}
	return nil, false
}

func nodeStated(n events.NodeAnnounced, t time.Time) stmt {
	return st("node_stated", n.Name, n.Group, n.Total.MemoryMiB, n.Total.DiskMiB, n.Total.CPUs,
		n.Total.Spindles, n.Free.MemoryMiB, n.Free.DiskMiB, n.Offline, n.Drained, n.VMCapable,
		strs(n.Tags), t)
}

// moveID is a move's key: the opcode that does it.
func moveID(request string, job, index int) string {
	return fmt.Sprintf("%s/%d/%d", request, job, index)
}

// instanceOf is the instance an event is about, for event_log.instance
// (watch filters); empty when the payload names none.
func instanceOf(p events.Payload) string {
	switch e := p.(type) {
	case events.InstanceDeclared, events.InstancePlaced, events.Progress, events.End,
		events.MoveStatusReported, events.MigrationActionRequested, events.MigrationStateChanged:
		return events.KeyOf(p) // each is keyed by its instance
	case events.JobReleased:
		if len(e.Job.Opcodes) > 0 {
			return e.Job.Opcodes[0].Instance
		}
	case events.OpcodeDispatched:
		return e.Opcode.Instance
	case events.MigrationPhaseDispatched:
		return e.Instance
	case events.MigrationPhaseEnded:
		return e.Instance
	}
	return ""
}

// requestOf is the request an event serves: its reason trail's, else its
// correlation id.
func requestOf(env events.Envelope) string {
	if env.Reason.RequestID != "" {
		return env.Reason.RequestID
	}
	return env.CorrelationID
}

// strs keeps a nil slice from becoming SQL NULL in a NOT NULL array column.
func strs(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// jsonArray encodes a slice as a JSON array, [] for nil. The values are
// this build's own structs, which always marshal.
func jsonArray[T any](v []T) string {
	if v == nil {
		return "[]"
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("projector: marshal %T: %v", v, err))
	}
	return string(b)
}
