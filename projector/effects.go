package projector

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
)

// stmt is one SQL statement of an effect.
type stmt struct {
	sql  string
	args []any
	// derive, when set, names a migration whose syncs and last sync
	// size are to be derived once the batch's statements have run.
	derive string

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

func st(name string, args ...any) stmt { return stmt{sql: q(name), args: args} }

// effects returns the statements that fold one event into the views. Every
// time written is the event's own (env.Time): the projection has no clock of
// its own, or a replay would differ from the live views.
func effects(env events.Envelope, p events.Payload) ([]stmt, error) {
	t := env.Time
	switch e := p.(type) {
	// drove.inventory
	case events.GroupDeclared:
		return []stmt{st("group_declared", e.Name, string(e.AllocPolicy), strs(e.Tags), t)}, nil
	case events.NodeAnnounced:
		return []stmt{nodeStated(e, t)}, nil
	case events.NodeUpdated:
		return []stmt{nodeStated(events.NodeAnnounced(e), t)}, nil
	case events.InstanceDeclared:
		var disk int64
		for _, d := range e.Size.DisksMiB {
			disk += d
		}
		return []stmt{st("instance_declared", e.Name, e.Owner, e.Size.MemoryMiB, e.Size.VCPUs, disk,
			string(e.Storage), string(e.RunState), e.PrimaryNode, e.SecondaryNode, strs(e.Tags),
			e.UserMigration, t)}, nil
	case events.InstancePlaced:
		return []stmt{st("instance_placed", e.Instance, e.Group, e.PrimaryNode, e.SecondaryNode, e.Request, t)}, nil

	// drove.requests
	case events.EvacuationRequested:
		return []stmt{st("evacuation_requested", e.Request, strs(e.Nodes), string(e.Mode), e.DryRun,
			e.IgnoreSoftErrors, e.MaxMovesPerNode, env.Reason.Actor, env.Reason.Why, t)}, nil
	case events.GroupChangeRequested:
		return []stmt{st("group_change_requested", e.Request, strs(e.Instances), strs(e.TargetGroups),
			env.Reason.Actor, env.Reason.Why, t, e.DryRun)}, nil
	case events.RequestApproved:
		return []stmt{st("request_approved", e.Request, t)}, nil
	case events.RequestCancelled:
		return []stmt{st("request_cancelled", e.Request, t)}, nil
	case events.RequestRejected:
		return []stmt{st("request_rejected", e.Request, t, e.Reason)}, nil
	case events.RequestFinished:
		return []stmt{st("request_finished", e.Request, t, jsonArray(e.Moved), jsonArray(e.Failed))}, nil

	// drove.plans
	case events.PlanComputed:
		jobs := jsonArray(e.Jobs)
		return []stmt{
			st("plan_computed", e.Request, jsonArray(e.Moved), jsonArray(e.Failed), jobs,
				e.ScoreBefore, e.ScoreAfter, t),
			st("request_planned", e.Request, t),
			st("plan_jobs", e.Request, jobs),
			st("plan_jobs_dropped", e.Request, len(e.Jobs)),
		}, nil

	// drove.jobs
	case events.JobReleased:
		return []stmt{st("job_released", e.Request, e.Job.Index, t)}, nil
	case events.JobCancelled:
		return []stmt{st("job_cancelled", e.Request, e.Job, t, e.Reason)}, nil
	case events.JobEnded:
		return []stmt{st("job_ended", e.Request, e.Job, t, string(e.Status), e.Error)}, nil

	// drove.opcodes
	case events.OpcodeDispatched:
		id := migrationID(e.Request, e.Job, e.Index)
		return []stmt{
			st("opcode_dispatched", e.Request, e.Job, e.Index, e.Node, string(e.Opcode.OpID),
				e.Opcode.Instance, e.Opcode.From, e.Opcode.To, t),
			st("migration_dispatched", id, e.Request, e.Job, e.Index, e.Opcode.Instance,
				e.Opcode.From, e.Opcode.To, string(e.Opcode.OpID), t),
		}, nil
	case events.OpcodeStarted:
		id := migrationID(e.Request, e.Job, e.Index)
		return []stmt{
			st("opcode_started", e.Request, e.Job, e.Index, t),
			st("migration_started", id, e.Request, e.Job, e.Index, t),
		}, nil
	case events.OpcodeCancelled:
		return []stmt{st("opcode_cancelled", e.Request, e.Job, e.Index, t)}, nil
	case events.OpcodeEnded:
		id := migrationID(e.Request, e.Job, e.Index)
		return []stmt{
			st("opcode_ended", e.Request, e.Job, e.Index, t, string(e.Status), e.Error),
			st("migration_ended", id, e.Request, e.Job, e.Index, t, string(e.Status), e.Error),
		}, nil

	// drove.progress
	case events.Progress:
		id := migrationID(e.Request, e.Job, e.Index)
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
			out = append(out, syncRow{id: id, started: started, bytes: max(e.Total, e.Current)}.stmt(),
				stmt{derive: id})
		}
		return out, nil
	case events.End:
		id := migrationID(e.Request, e.Job, e.Index)
		s := st("migration_end", id, e.Request, e.Job, e.Index, e.Instance, e.Phase,
			string(e.State), e.Message, t)
		s.key = progressKey(id) // it writes the progress columns too: a Progress run ends at it
		return []stmt{s}, nil
	case events.MoveStatusReported:
		return []stmt{statusRow{request: e.Request, instance: e.Instance, node: e.Node,
			status: string(e.Status), t: t}.stmt()}, nil

	// drove.audit: the event log is the whole view.
	case events.AuditRecorded:
		return nil, nil

	// drove.migrations, drove.settings, and the migration phases and
	// receiver rendezvous on drove.opcodes (migrations/003).
	case events.MigrationActionRequested:
		switch e.Action {
		case events.ActionBegin, events.ActionAutomatic, events.ActionSchedule:
			return []stmt{st("migration_asked", e.Migration, e.Instance, t)}, nil
		}
		return nil, nil // the event log holds the command
	case events.MigrationStateChanged:
		return []stmt{st("migration_recorded", e.Migration, e.Instance, e.Account, string(e.Role), e.Source,
			e.Target, e.Automatic, string(e.State), e.Phase, e.Syncs, e.LastSyncBytes, e.ScheduledAt,
			string(e.PriorRunState), e.Switched, e.Finalized, e.Message, e.Error, e.ErrorDetail, t)}, nil
	case events.MigrationPhaseDispatched:
		return []stmt{st("migration_phase_dispatched", e.Migration, e.Seq, e.Instance, e.Phase, e.Node,
			e.Sync, e.SendMbps, t)}, nil
	case events.MigrationPhaseEnded:
		return []stmt{st("migration_phase_ended", e.Migration, e.Seq, e.Instance, e.Phase, e.Node, t,
			string(e.Status), e.Bytes, e.DowntimeMS, e.Error)}, nil
	case events.ReceiverReady:
		return nil, nil // a rendezvous between executors: the event log is enough
	case events.SettingsChanged:
		return []stmt{st("settings_changed", e.AllowUserMigrations, e.MaxRunningMigrationsPerNode,
			e.SendMbpsLimit, e.ResyncMaxBytes, e.ResyncMaxSyncs, e.ResyncShrinkWindow,
			e.ProgressTimeoutSeconds, e.FinalizeGraceSeconds, t)}, nil
	}
	// A type events registers but this file does not fold: a build
	// mistake, caught by the test that folds a sample of every type.
	return nil, fmt.Errorf("projector: no effect for %s v%d", env.Type, env.Version)
}

func nodeStated(n events.NodeAnnounced, t time.Time) stmt {
	return st("node_stated", n.Name, n.Group, n.Total.MemoryMiB, n.Total.DiskMiB, n.Total.CPUs,
		n.Total.Spindles, n.Free.MemoryMiB, n.Free.DiskMiB, n.Offline, n.Drained, n.VMCapable,
		strs(n.Tags), t)
}

// migrationID is a migration's key: the opcode that does the move.
func migrationID(request string, job, index int) string {
	return fmt.Sprintf("%s/%d/%d", request, job, index)
}

// instanceOf is the instance an event is about, for event_log.instance
// (watch filters); empty when the payload names none.
func instanceOf(p events.Payload) string {
	switch e := p.(type) {
	case events.InstanceDeclared:
		return e.Name
	case events.InstancePlaced:
		return e.Instance
	case events.JobReleased:
		if len(e.Job.Opcodes) > 0 {
			return e.Job.Opcodes[0].Instance
		}
	case events.OpcodeDispatched:
		return e.Opcode.Instance
	case events.Progress:
		return e.Instance
	case events.End:
		return e.Instance
	case events.MoveStatusReported:
		return e.Instance
	case events.MigrationActionRequested:
		return e.Instance
	case events.MigrationStateChanged:
		return e.Instance
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
