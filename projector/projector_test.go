package projector_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	. "github.com/drovehq/drove/projector"
)

const req = "req-1"

// scenario is one evacuation from request to finish, with inventory, a
// refreshed plan, progress, statuses and an audit record: every event type.
func scenario() []events.Envelope {
	yes := true
	op := events.Opcode{OpID: events.OpInstanceMigrate, Instance: "vm1", From: "n1", To: "n2"}
	job := events.Job{Index: 0, Opcodes: []events.Opcode{op}}
	job1 := events.Job{Index: 1, Opcodes: []events.Opcode{{OpID: events.OpInstanceFailover, Instance: "vm2", From: "n1", To: "n2"}},
		Depends: []events.Dependency{{Job: -1, Statuses: []events.JobStatus{events.JobSuccess}}}}
	node := events.NodeAnnounced{Name: "n1", Group: "g1",
		Total: events.Resources{MemoryMiB: 4096, DiskMiB: 100000, CPUs: 8, Spindles: 2},
		Free:  events.Resources{MemoryMiB: 2048, DiskMiB: 50000, CPUs: 4}, VMCapable: true, Tags: []string{"rack:a"}}
	drained := events.NodeUpdated(node)
	drained.Drained = true
	sync1 := time.Date(2025, 1, 1, 0, 0, 20, 0, time.UTC)
	sync2 := time.Date(2025, 1, 1, 0, 0, 23, 0, time.UTC)
	progress := func(at int, phase string, cur, total int64, started time.Time) events.Envelope {
		return ev(events.Progress{Request: req, Job: 0, Index: 0, Instance: "vm1", Node: "n1", Phase: phase,
			State: events.ProgressRunning, Current: cur, Total: total, ETASeconds: 3, BytesPerSecond: 1000,
			Message: phase + " going", Started: started}, at, req)
	}
	return []events.Envelope{
		ev(events.GroupDeclared{Name: "g1", AllocPolicy: events.AllocPreferred, Tags: []string{"dc1"}}, 1, ""),
		ev(node, 2, ""),
		ev(events.NodeAnnounced{Name: "n2", Group: "g1", Total: node.Total, Free: node.Total, VMCapable: true}, 2, ""),
		ev(events.InstanceDeclared{Name: "vm1", Owner: "acct-1", Size: events.Size{MemoryMiB: 512, VCPUs: 2, DisksMiB: []int64{100, 200}},
			Storage: events.StorageDRBD, RunState: events.RunRunning, PrimaryNode: "n1", SecondaryNode: "n2", UserMigration: &yes, MaxDowntimeMS: 450}, 3, ""),
		ev(events.EvacuationRequested{Request: req, Nodes: []string{"n1"}, Mode: events.EvacAll, DryRun: true, MaxMovesPerNode: 2}, 10, req),
		ev(drained, 11, req),
		ev(events.PlanComputed{Request: req, Moved: []events.Moved{{Instance: "vm1", Group: "g1", Nodes: []string{"n2", "n1"}}},
			Failed: []events.Failed{{Instance: "vm2", Reason: "no room"}}, Jobs: []events.Job{job, job1}, ScoreBefore: 2, ScoreAfter: 1}, 12, req),
		ev(events.RequestApproved{Request: req}, 13, req),
		ev(events.PlanComputed{Request: req, Moved: []events.Moved{{Instance: "vm1", Group: "g1", Nodes: []string{"n2", "n1"}}},
			Failed: []events.Failed{}, Jobs: []events.Job{job}, ScoreBefore: 2, ScoreAfter: 0.5}, 14, req),
		ev(events.JobReleased{Request: req, Job: job}, 15, req),
		ev(events.OpcodeDispatched{Request: req, Job: 0, Index: 0, Node: "n1", Opcode: op}, 15, req),
		ev(events.OpcodeStarted{Request: req, Job: 0, Index: 0, Node: "n1"}, 16, req),
		ev(events.MoveStatusReported{Request: req, Instance: "vm1", Node: "n1", Status: events.StatusMigrationSource}, 17, req),
		ev(events.MoveStatusReported{Request: req, Instance: "vm1", Node: "n2", Status: events.StatusMigrationDestination}, 17, req),
		progress(18, events.PhaseBegin, 0, 0, time.Time{}),
		progress(21, events.PhaseSync, 500, 1000, sync1),
		progress(22, events.PhaseSync, 1000, 1000, sync1),
		progress(24, events.PhaseSync, 40, 50, sync2),
		progress(26, events.PhaseSwitch, 1, 2, time.Time{}),
		ev(events.End{Request: req, Job: 0, Index: 0, Instance: "vm1", Node: "n1", Phase: events.PhaseSwitch,
			State: events.EndSuccessful, Message: "done"}, 27, req),
		ev(events.OpcodeEnded{Request: req, Job: 0, Index: 0, Node: "n1", Status: events.JobSuccess}, 27, req),
		ev(events.MoveStatusReported{Request: req, Instance: "vm1", Node: "n1", Status: events.StatusDown}, 27, req),
		ev(events.MoveStatusReported{Request: req, Instance: "vm1", Node: "n2", Status: events.StatusUp}, 27, req),
		ev(events.InstancePlaced{Instance: "vm1", Group: "g1", PrimaryNode: "n2", SecondaryNode: "n1",
			PreviousGroup: "g1", PreviousPrimary: "n1", PreviousSecondary: "n2", Request: req}, 27, req),
		ev(events.JobEnded{Request: req, Job: 0, Status: events.JobSuccess}, 28, req),
		ev(events.RequestFinished{Request: req, Moved: []events.Moved{{Instance: "vm1", Group: "g1", Nodes: []string{"n2", "n1"}}},
			Failed: []events.Failed{}}, 29, req),
		ev(events.GroupChangeRequested{Request: "req-2", Instances: []string{"vm1"}, TargetGroups: []string{"g2"}}, 30, "req-2"),
		ev(events.RequestRejected{Request: "req-2", Reason: "g2 unknown"}, 31, "req-2"),
		ev(events.EvacuationRequested{Request: "req-3", Nodes: []string{"n2"}, Mode: events.EvacPrimaryOnly}, 32, "req-3"),
		ev(events.RequestCancelled{Request: "req-3"}, 33, "req-3"),
		ev(events.JobCancelled{Request: "req-3", Job: 0, Reason: "request cancelled"}, 33, "req-3"),
		ev(events.OpcodeCancelled{Request: "req-3", Job: 0, Index: 0, Node: "n2", Reason: "request cancelled"}, 33, "req-3"),
		ev(events.AuditRecorded{Action: "migrate", Subject: "vm1", Outcome: events.AuditDenied, Detail: "owner"}, 34, ""),
		ev(events.CheckpointRecorded{Topic: events.TopicRequests, Partition: 0, First: 0, Records: 1, FromOffset: 0, NextOffset: 2,
			Prev: strings.Repeat("00", 32), Head: strings.Repeat("11", 32), Marks: "AAAAAAAAAAA="}, 35, ""),
		ev(events.ReceiverReady{Request: req, Job: 0, Index: 0, Node: "n1", Target: "n2", Addr: "10.0.0.2:7000"}, 16, req),
		// A relay to the target's partition: the event log holds it, no view.
		ev(events.TargetNotified{Node: "n2", Event: ev(events.OpcodeDispatched{Request: req, Job: 0, Index: 0,
			Node: "n1", Opcode: op}, 16, req)}, 16, req),
		ev(events.NodeHeartbeat{Node: "n1", IntervalMS: 2000, Sent: time.Date(2025, 1, 1, 0, 0, 35, 0, time.UTC)}, 35, ""),
		// The planner's check of a lapse: the event log holds it, no view.
		ev(events.LeaseCheck{Node: "n1", Key: "n1/lease-check/0", Sent: time.Date(2025, 1, 1, 0, 0, 36, 0, time.UTC)}, 36, ""),
		ev(events.NodeActionRequested{Request: "na-1", Node: "n1", Action: events.NodeUndrain}, 36, "na-1"),
		ev(events.NodeActionEnded{Request: "na-1", Node: "n1", Action: events.NodeUndrain, Refused: true,
			Reason: "undrain of node n1 refused: testing"}, 37, "na-1"),
	}
}

// instanceMigration is one per-instance migration of vm1 from n2 to n1:
// begin, one sync, switch, with its phases, progress and settings, and a
// finalize still running at the end.
func instanceMigration() []events.Envelope {
	const mig = "mig-1"
	at := time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)
	rec := events.MigrationStateChanged{Migration: mig, Instance: "vm1", Account: "acct-1", Role: events.RoleOwner,
		Source: "n2", Target: "n1", State: events.MigrationRunning, Phase: events.PhaseBegin,
		ScheduledAt: &at, PriorRunState: events.RunRunning}
	synced := rec
	synced.State, synced.Phase, synced.Syncs, synced.LastSyncBytes = events.MigrationPaused, events.PhaseSync, 1, 4096
	switched := synced
	switched.State, switched.Phase, switched.Switched, switched.Message = events.MigrationSuccessful, events.PhaseSwitch, true, "switched"
	switched.DowntimeMS, switched.WorkloadDowntimeMS = 120, 135
	switched.PredictedDowntimeMS, switched.MaxDowntimeMS = 110, 300
	finalizing := switched
	finalizing.PhaseRunning, finalizing.Message = true, "finalizing"
	phase := func(seq int, name string) (events.Envelope, events.Envelope) {
		return ev(events.MigrationPhaseDispatched{Migration: mig, Instance: "vm1", Node: "n2", Seq: seq, Phase: name,
				Source: "n2", Target: "n1", Sync: seq, SendMbps: 100}, 40+3*seq, mig),
			ev(events.MigrationPhaseEnded{Migration: mig, Instance: "vm1", Node: "n2", Seq: seq, Phase: name,
				Status: events.JobSuccess, Bytes: int64(seq) * 4096, WorkloadDowntimeMS: int64(seq) * 7, OverheadMS: int64(seq) * 5}, 42+3*seq, mig)
	}
	d0, e0 := phase(0, events.PhaseBegin)
	d1, e1 := phase(1, events.PhaseSync)
	d2, e2 := phase(2, events.PhaseSwitch)
	d3, _ := phase(3, "finalize")
	settings := events.DefaultSettings()
	settings.SendMbpsLimit, settings.MaxDowntimeMS = 100, 250
	return []events.Envelope{
		ev(settings, 39, ""),
		ev(events.MigrationActionRequested{Migration: mig, Instance: "vm1", Action: events.ActionBegin, Target: "n1",
			Account: "acct-1", Role: events.RoleOwner}, 40, mig),
		ev(rec, 40, mig), d0, e0,
		ev(events.MigrationActionRequested{Migration: mig, Instance: "vm1", Action: events.ActionSync,
			Account: "acct-1", Role: events.RoleOwner}, 43, mig),
		d1,
		ev(events.Progress{Request: mig, Job: 0, Index: 1, Instance: "vm1", Node: "n2", Phase: events.PhaseSync,
			State: events.ProgressRunning, Current: 2048, Total: 4096, Started: at}, 44, mig),
		e1, ev(synced, 45, mig), d2,
		ev(events.Progress{Request: mig, Job: 0, Index: 2, Instance: "vm1", Node: "n2", Phase: events.PhaseSwitch,
			State: events.ProgressRunning, Current: 8192, Total: 8192}, 47, mig),
		e2,
		ev(events.End{Request: mig, Job: 0, Index: 2, Instance: "vm1", Node: "n2", Phase: events.PhaseSwitch,
			State: events.EndSuccessful, Message: "switched"}, 48, mig),
		ev(switched, 48, mig), d3, ev(finalizing, 49, mig),
	}
}

func TestScenarioEveryEffect(t *testing.T) {
	e := newEnv(t)
	evs := append(scenario(), instanceMigration()...)
	seen := map[string]bool{}
	for _, v := range evs {
		seen[v.Type] = true
		e.append(v) // one transaction each, as services do
	}
	for _, typ := range events.Types() {
		if !seen[typ] {
			t.Errorf("the scenario lacks %s", typ)
		}
	}
	e.run()

	var n int
	e.get(`SELECT count(*) FROM event_log`, &n)
	if history := historyEvents(evs); n != history {
		t.Errorf("event_log has %d rows, want %d", n, historyEvents(evs))
	}
	checkInventoryViews(t, e)
	checkRequestViews(t, e)
	checkMoveViews(t, e)
	checkInstanceMigrationViews(t, e)

	rep := e.replayEqual()
	if rep.Events != len(evs) || rep.LiveBehind || rep.ReplaySchema == "" || rep.FoldDuration <= 0 {
		t.Errorf("report %+v", rep)
	}
	var dropped bool
	e.get(`SELECT to_regnamespace('`+rep.ReplaySchema+`') IS NULL`, &dropped)
	check(t, "replay schema dropped", dropped, true)
}

// checkInventoryViews checks the scenario's group, node, node action and
// instance rows.
func checkInventoryViews(t *testing.T, e *env) {
	var s1, s2, s3 string
	var b1, b2 bool
	var i1, i2 int64
	e.get(`SELECT alloc_policy, array_to_string(tags, ',') FROM groups WHERE name = 'g1'`, &s1, &s2)
	check(t, "group", s1+" "+s2, "preferred dc1")
	e.get(`SELECT group_name, drained, total_memory_mib, free_disk_mib FROM nodes WHERE name = 'n1'`, &s1, &b1, &i1, &i2)
	check(t, "node n1", []any{s1, b1, i1, i2}, []any{"g1", true, int64(4096), int64(50000)})
	var beat time.Time
	e.get(`SELECT heartbeat_at FROM nodes WHERE name = 'n1'`, &beat)
	check(t, "node n1 heartbeat", beat.UTC(), time.Date(2025, 1, 1, 0, 0, 35, 0, time.UTC))
	e.get(`SELECT node || ' ' || action || ' ' || actor || ' ' || state || ' ' || reason FROM node_actions WHERE request = 'na-1'`, &s1)
	check(t, "node action", s1, "n1 undrain operator:alice refused undrain of node n1 refused: testing")
	e.get(`SELECT primary_node, secondary_node, group_name, last_request, disk_mib, user_migration, max_downtime_ms FROM instances WHERE name = 'vm1'`,
		&s1, &s2, &s3, new(string), &i1, &b2, &i2)
	check(t, "instance vm1", []any{s1, s2, s3, i1, b2, i2}, []any{"n2", "n1", "g1", int64(300), true, int64(450)})
}

// checkRequestViews checks the scenario's requests, plan, jobs and opcodes.
func checkRequestViews(t *testing.T, e *env) {
	var s1, s2, s3 string
	var b1 bool
	var n int
	var status, kind, actor, why, mode string
	var plans int
	var dry bool
	e.get(`SELECT status, kind, actor, why, mode, plans, dry_run FROM request_status WHERE id = 'req-1'`,
		&status, &kind, &actor, &why, &mode, &plans, &dry)
	check(t, "req-1", []any{status, kind, actor, why, mode, plans, dry},
		[]any{"finished", "evacuation", "operator:alice", "testing", "all", 2, true})
	e.get(`SELECT status, rejected_reason, kind, array_to_string(target_groups, ',') FROM request_status WHERE id = 'req-2'`,
		&status, &s1, &kind, &s2)
	check(t, "req-2", []any{status, s1, kind, s2}, []any{"rejected", "g2 unknown", "group-change", "g2"})
	e.get(`SELECT status FROM request_status WHERE id = 'req-3'`, &status)
	check(t, "req-3", status, "cancelling")

	var score float64
	e.get(`SELECT score_after, jsonb_array_length(jobs) FROM plans WHERE request = 'req-1'`, &score, &n)
	check(t, "plan", []any{score, n}, []any{0.5, 1})
	e.get(`SELECT instance, status, released_at IS NOT NULL, jsonb_array_length(opcodes) FROM jobs WHERE request = 'req-1' AND idx = 0`,
		&s1, &s2, &b1, &n)
	check(t, "job 0", []any{s1, s2, b1, n}, []any{"vm1", "success", true, 1})
	e.get(`SELECT instance, jsonb_array_length(opcodes) FROM jobs WHERE request = 'req-1' AND idx = 1`, &s1, &n)
	check(t, "job 1, dropped by the refreshed plan", []any{s1, n}, []any{"", 0})
	e.get(`SELECT cancel_reason FROM jobs WHERE request = 'req-3' AND idx = 0`, &s1)
	check(t, "req-3 job", s1, "request cancelled")

	e.get(`SELECT node, op_id, from_node, to_node, status, started_at IS NOT NULL FROM opcodes WHERE request = 'req-1'`,
		&s1, &s2, &s3, &kind, &status, &b1)
	check(t, "opcode", []any{s1, s2, s3, kind, status, b1}, []any{"n1", "OP_INSTANCE_MIGRATE", "n1", "n2", "success", true})
	e.get(`SELECT cancel_requested_at IS NOT NULL FROM opcodes WHERE request = 'req-3'`, &b1)
	check(t, "cancelled opcode", b1, true)
}

// checkMoveViews checks the evacuation's move, its statuses and the
// event_log rows of its progress and of the audit.
func checkMoveViews(t *testing.T, e *env) {
	var s1, s2, s3 string
	var i1, i2 int64
	var n int
	var state, phase, endState, msg string
	var syncs int
	e.get(`SELECT state, instance, source_node, target_node, phase, progress_end_state, message, syncs, last_sync_bytes, total_bytes
	       FROM move_state WHERE id = 'req-1/0/0'`,
		&state, &s1, &s2, &s3, &phase, &endState, &msg, &syncs, &i1, &i2)
	check(t, "migration", []any{state, s1, s2, s3, phase, endState, msg, syncs, i1, i2},
		[]any{"successful", "vm1", "n1", "n2", "switch", "successful", "done", 2, int64(50), int64(2)})

	e.get(`SELECT string_agg(node || '=' || status, ',' ORDER BY node) FROM move_status WHERE request = 'req-1'`, &s1)
	check(t, "move status", s1, "n1=down,n2=up")

	// The progress of the per-instance migration (instanceMigration) is
	// on the same topic; which of the two folds first is not fixed.
	e.get(`SELECT request_id, instance FROM event_log WHERE type = 'move.progress' AND payload->>'node' = 'n1' ORDER BY seq LIMIT 1`, &s1, &s2)
	check(t, "event_log progress", []any{s1, s2}, []any{req, "vm1"})
	e.get(`SELECT count(*) FROM event_log WHERE type = 'audit.recorded'`, &n)
	check(t, "audit", n, 1)
}

// checkInstanceMigrationViews checks the per-instance migration's record,
// phases and downtimes, and the settings.
func checkInstanceMigrationViews(t *testing.T, e *env) {
	var s1, s2, s3, state, phase, kind string
	var i1, i2 int64
	var n, syncs int
	var queued, switched, running bool
	var started, finished bool
	e.get(`SELECT state, phase, syncs, last_sync_bytes, source_node, target_node, account, prior_run_state,
	              switched, queued, started_at IS NOT NULL, finished_at IS NOT NULL, current_bytes, total_bytes, phase_running
	       FROM instance_migrations WHERE id = 'mig-1'`,
		&state, &phase, &syncs, &i1, &s1, &s2, &s3, &kind, &switched, &queued, &started, &finished, new(int64), &i2, &running)
	check(t, "instance migration", []any{state, phase, syncs, i1, s1, s2, s3, kind, switched, queued, started, finished, i2, running},
		[]any{"successful", "switch", 1, int64(4096), "n2", "n1", "acct-1", "running", true, false, true, true, int64(8192), true})
	e.get(`SELECT count(*) FROM move_state WHERE request = 'mig-1' OR id = 'mig-1'`, &n)
	check(t, "per-instance rows left out of move_state", n, 0)
	e.get(`SELECT count(*), sum(bytes), string_agg(phase || '=' || status, ',' ORDER BY seq) FROM migration_phases WHERE migration = 'mig-1'`,
		&n, &i1, &s1)
	check(t, "migration phases", []any{n, i1, s1}, []any{4, int64(12288), "begin=success,sync=success,switch=success,finalize="})
	e.get(`SELECT downtime_ms, workload_downtime_ms FROM instance_migrations WHERE id = 'mig-1'`, &i1, &i2)
	check(t, "the record's downtime, Drove's and the workload's", []any{i1, i2}, []any{int64(120), int64(135)})
	e.get(`SELECT sum(workload_downtime_ms) FROM migration_phases WHERE migration = 'mig-1'`, &i1)
	check(t, "the phases' workload downtime", i1, int64(21))
	e.get(`SELECT predicted_downtime_ms, max_downtime_ms FROM instance_migrations WHERE id = 'mig-1'`, &i1, &i2)
	check(t, "the record's predicted downtime and budget", []any{i1, i2}, []any{int64(110), int64(300)})
	e.get(`SELECT sum(overhead_ms) FROM migration_phases WHERE migration = 'mig-1'`, &i1)
	check(t, "the phases' overhead", i1, int64(15))
	var mbps float64
	e.get(`SELECT send_mbps_limit, max_running_migrations_per_node, max_downtime_ms FROM settings`, &mbps, &n, &i1)
	check(t, "settings", []any{mbps, n, i1}, []any{100.0, 2, int64(250)})
	e.get(`SELECT count(*) FROM event_log WHERE instance = 'vm1' AND type LIKE 'migration.%'`, &n)
	check(t, "migration events logged by instance", n, 13)
}

func check(t *testing.T, what string, got, want any) {
	t.Helper()
	if g, w := fmtAny(got), fmtAny(want); g != w {
		t.Errorf("%s: got %s, want %s", what, g, w)
	}
}

func fmtAny(v any) string {
	if vs, ok := v.([]any); ok {
		parts := make([]string, len(vs))
		for i, x := range vs {
			parts[i] = fmtAny(x)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(
		strings.TrimSpace(fmt.Sprint(v)), "\n", " "), "  ", " "))
}

func TestDuplicatesChangeNothing(t *testing.T) {
	e := newEnv(t)
	base := events.NodeAnnounced{Name: "n1", Group: "g1", Total: events.Resources{MemoryMiB: 1}, Free: events.Resources{MemoryMiB: 1}}
	drained := events.NodeUpdated(base)
	drained.Drained = true
	undrained := events.NodeUpdated(base)
	a := ev(drained, 1, "")
	b := ev(undrained, 2, "")
	plan := ev(events.PlanComputed{Request: req, Moved: []events.Moved{}, Failed: []events.Failed{{Instance: "vm1", Reason: "x"}}}, 3, req)
	// a and plan appended again later, as a producer retrying an uncertain
	// commit does: neither the count of plans nor the node may change.
	// The first copies are folded first, so the later ones meet the
	// primary key of event_log (the batch is folded again, reading which
	// ids are logged); Replay folds all five in one batch, where the
	// duplicates are found within it.
	e.append(a, plan)
	e.run()
	e.append(b)
	e.append(a, plan)
	e.run()
	var drainedNow bool
	var plans, logged int
	e.get(`SELECT drained FROM nodes WHERE name = 'n1'`, &drainedNow)
	e.get(`SELECT plans FROM requests WHERE id = 'req-1'`, &plans)
	e.get(`SELECT count(*) FROM event_log`, &logged)
	check(t, "after duplicates", []any{drainedNow, plans, logged}, []any{false, 1, 3})
	e.replayEqual()
}

// TestOrderAcrossTopicsDoesNotMatter folds the same log twice into two
// schemas, once topic by topic in one order and once in the reverse, keeping
// each partition's own order, and compares the tables.
func TestOrderAcrossTopicsDoesNotMatter(t *testing.T) {
	e := newEnv(t)
	evs := scenario()
	byTopic := map[string][]kafka.Raw{}
	for i, v := range evs {
		topic, _ := v.Topic()
		b, err := events.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		// One partition per topic: records keep log order within it.
		byTopic[topic] = append(byTopic[topic], kafka.Raw{Topic: topic, Partition: 0,
			Offset: int64(i), Key: []byte(v.Key), Value: b})
	}
	topics := events.Topics()
	fold := func(schema string, order []string, batch int) map[string]Checksum {
		if err := ApplySchema(e.ctx, e.pool, schema); err != nil {
			t.Fatal(err)
		}
		var all []kafka.Raw
		for _, topic := range order {
			all = append(all, byTopic[topic]...)
		}
		if err := Fold(e.ctx, e.pool, schema, all, batch); err != nil {
			t.Fatal(err)
		}
		sums, err := Checksums(e.ctx, e.pool, schema)
		if err != nil {
			t.Fatal(err)
		}
		return sums
	}
	// Jobs, opcodes and progress before the plan and the requests they
	// belong to: JobEnded before PlanComputed, Progress before dispatch.
	reversed := slices.Clone(topics)
	slices.Reverse(reversed)
	a := fold("order_a", topics, 500)
	b := fold("order_b", reversed, 3)
	for _, name := range ComparedTables {
		if a[name] != b[name] {
			t.Errorf("%s differs between orders: %+v vs %+v", name, a[name], b[name])
		}
	}
	if a["moves"] == (Checksum{}) || a["moves"] == b["event_log"] {
		t.Errorf("no checksums: %+v", a)
	}
}

func TestCrashMidStreamNeitherLosesNorDoubles(t *testing.T) {
	e := newEnv(t)
	for range 8 {
		evs := scenario()
		for i := range evs {
			// Fresh ids per round, same keys: many upserts of the same rows.
			evs[i].ID = events.NewID()
		}
		e.append(evs[:len(evs)/2]...)
		e.append(evs[len(evs)/2:]...)
	}
	small := func(c *Config) { c.BatchSize = 7 }

	// Crash 1: the transaction fails just before its commit.
	p1 := e.projector(small)
	batches := 0
	p1.SetBeforeCommit(func(context.Context) error {
		batches++
		if batches == 4 {
			return errors.New("simulated crash before commit")
		}
		return nil
	})
	if err := p1.Run(e.ctx); err == nil || !strings.Contains(err.Error(), "simulated crash") {
		t.Fatalf("Run with a crashing commit = %v", err)
	}
	var afterCrash int
	e.get(`SELECT count(*) FROM event_log`, &afterCrash)
	if afterCrash == 0 || afterCrash > 21 {
		t.Fatalf("after 3 committed batches of at most 7 records, event_log has %d rows", afterCrash)
	}

	// Crash 2: the context is cancelled with a transaction open, just
	// before its commit: the commit fails or lands, and either way the
	// offsets committed with it say which.
	p2 := e.projector(small)
	ctx2, cancel2 := context.WithCancel(e.ctx)
	defer cancel2()
	p2.SetAfterCommit(func(folded int) {
		if folded >= 50 {
			p2.SetBeforeCommit(func(context.Context) error { cancel2(); return nil })
		}
	})
	if err := p2.Run(ctx2); err != nil {
		t.Fatalf("Run cancelled mid-transaction = %v", err)
	}

	// A third projector finishes the job.
	e.run()
	var logged, distinct int
	e.get(`SELECT count(*), count(DISTINCT id) FROM event_log`, &logged, &distinct)
	if want := 8 * historyEvents(scenario()); logged != want || distinct != want {
		t.Fatalf("event_log: %d rows, %d distinct, want %d", logged, distinct, want)
	}
	var plans int
	e.get(`SELECT plans FROM requests WHERE id = 'req-1'`, &plans)
	check(t, "plans after 8 rounds of 2", plans, 16)
	e.replayEqual()
}

func TestUndecodableRecordIsSetAside(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	e.append(ev(events.RequestApproved{Request: "r0"}, 1, "r0"))
	for _, bad := range []string{`{"not":"an event"}`,
		`{"id":"x","type":"node.exploded","version":1,"time":"2025-01-01T00:00:00Z","key":"n","producer":"p","reason":{"actor":"a","why":"w"},"payload":{}}`} {
		if err := kafka.WriteRaw(e.ctx, e.k.Config(), events.TopicRequests, []byte("r1"), []byte(bad)); err != nil {
			t.Fatal(err)
		}
	}
	// Valid, but on the wrong topic; and valid, but Postgres cannot store
	// a NUL character.
	wrong := ev(events.RequestApproved{Request: "r2"}, 2, "r2")
	if err := e.prod.Append(e.ctx, events.TopicAudit, wrong); err != nil {
		t.Fatal(err)
	}
	e.append(ev(events.AuditRecorded{Action: "a", Subject: "s", Outcome: events.AuditAllowed, Detail: "nul\x00"}, 3, ""),
		ev(events.RequestApproved{Request: "r3"}, 4, "r3"))

	p := e.projector(func(c *Config) { c.Registerer = reg })
	stop := e.start(p)
	e.waitCaughtUp("drove")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var n, approved int
	e.get(`SELECT count(*) FROM undecodable_events`, &n)
	e.get(`SELECT count(*) FROM requests WHERE approved_at IS NOT NULL`, &approved)
	check(t, "set aside, and the good ones folded", []any{n, approved}, []any{4, 2})
	var msg string
	e.get(`SELECT string_agg(error, ' | ' ORDER BY error) FROM undecodable_events`, &msg)
	for _, want := range []string{"unknown event type", "malformed", "belongs on drove.requests", "postgres refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("undecodable errors %q lack %q", msg, want)
		}
	}
	got := p.Undecodable(events.TopicRequests) + p.Undecodable(events.TopicAudit)
	check(t, "undecodable metric", got, 4.0)
	if c, err := testutil.GatherAndCount(reg, "drove_projector_events_applied_total", "drove_projector_lag"); err != nil || c == 0 {
		t.Errorf("metrics not exported: %d, %v", c, err)
	}
	e.replayEqual()
}

func TestReplayReportsLiveBehind(t *testing.T) {
	e := newEnv(t)
	e.append(scenario()[:5]...)
	cfg := e.cfg
	cfg.ReplayWait = -1
	cfg.KeepReplay = true
	rep, err := Replay(e.ctx, cfg, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Equal || !rep.LiveBehind || len(rep.Behind) == 0 || rep.Events != 5 {
		t.Fatalf("report = %+v, want live behind and not equal", rep)
	}
	var rows int
	e.get(`SELECT count(*) FROM `+rep.ReplaySchema+`.event_log`, &rows)
	check(t, "kept replay schema", rows, 5)
}

func TestApplySchemaIsIdempotentAndSchemasAreSeparate(t *testing.T) {
	e := newEnv(t)
	for range 2 {
		if err := ApplySchema(e.ctx, e.pool, "other"); err != nil {
			t.Fatal(err)
		}
	}
	var versions string
	e.get(`SELECT string_agg(version::text, ',' ORDER BY version) FROM other.schema_versions`, &versions)
	vs, err := SchemaVersions()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, v := range vs {
		want = append(want, fmt.Sprint(v))
	}
	check(t, "versions", versions, strings.Join(want, ","))
	e.append(ev(events.RequestApproved{Request: "r1"}, 1, "r1"))
	e.run()
	var live, other int
	e.get(`SELECT (SELECT count(*) FROM drove.event_log), (SELECT count(*) FROM other.event_log)`, &live, &other)
	check(t, "rows per schema", []any{live, other}, []any{1, 0})
	if err := ApplySchema(e.ctx, e.pool, "Bad-Name"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("ApplySchema(bad name) = %v", err)
	}
	p := e.projector(func(c *Config) { c.Schema = "never_migrated" })
	if err := p.Run(e.ctx); !errors.Is(err, ErrSchemaOutdated) {
		t.Errorf("Run on an unmigrated schema = %v", err)
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	err := Config{Schema: "Drove!", BatchSize: -1, Partitions: -2}.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Validate = %v", err)
	}
	for _, want := range []string{"Brokers", "Schema", "BatchSize", "Partitions"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not report %s", err, want)
		}
	}
	if _, err := New(Config{Kafka: kafka.Config{Brokers: []string{"localhost:9092"}}}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New without a pool = %v", err)
	}
}

// TestLogRowsAreTheEventsOwn: event_log rows go in by COPY, built by the
// projector itself (copy.go), while effects are statements pgx encodes; an
// event's time, to the microsecond, its payload and its places read back the
// same either way, before 2000 (a negative binary timestamp) and after, and
// with nanoseconds that Postgres's microseconds truncate.
func TestLogRowsAreTheEventsOwn(t *testing.T) {
	e := newEnv(t)
	times := []time.Time{
		time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2025, 6, 1, 12, 0, 0, 123_456_789, time.UTC),
	}
	var want []string
	for i, at := range times {
		r := fmt.Sprintf("r%d", i)
		env := events.New(events.RequestApproved{Request: r}, events.WithProducer("test"), events.WithTime(at),
			events.WithReason(events.Reason{Actor: "operator:alice", Why: "testing ünïcode", RequestID: r}))
		e.append(env)
		want = append(want, fmt.Sprintf("%s %s true %s", r, at.Truncate(time.Microsecond).Format(time.RFC3339Nano), env.ID))
	}
	e.run()
	rows, err := e.pool.Query(e.ctx, `SELECT l.request_id, l.time, l.time = r.approved_at, l.id, l.why, l.payload->>'request'
		FROM drove.event_log l JOIN drove.requests r ON r.id = l.request_id ORDER BY l.request_id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var req, id, why, payloadReq string
		var at time.Time
		var same bool
		if err := rows.Scan(&req, &at, &same, &id, &why, &payloadReq); err != nil {
			t.Fatal(err)
		}
		if why != "testing ünïcode" || payloadReq != req {
			t.Errorf("%s: why %q, payload's request %q", req, why, payloadReq)
		}
		got = append(got, fmt.Sprintf("%s %s %v %s", req, at.UTC().Format(time.RFC3339Nano), same, id))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	check(t, "event_log rows", got, want)
}

// Heartbeats are current state: each sets its node's heartbeat_at and
// leaves no event_log row, so however much of their topic the broker's
// compaction has dropped (events/kafka tests that it keeps each node's
// last beat) a replay equals the views. A beat a log
// written before the heartbeats topic holds on drove.inventory is folded
// as before, not set aside.
func TestHeartbeatsAreStateNotHistory(t *testing.T) {
	e := newEnv(t)
	total := events.Resources{MemoryMiB: 1024, DiskMiB: 1000, CPUs: 2}
	e.append(ev(events.GroupDeclared{Name: "g1", AllocPolicy: events.AllocPreferred}, 1, ""),
		ev(events.NodeAnnounced{Name: "n1", Group: "g1", Total: total, Free: total}, 2, ""),
		ev(events.NodeAnnounced{Name: "n2", Group: "g1", Total: total, Free: total}, 2, ""))
	beat := func(node string, at int) events.Envelope {
		return ev(events.NodeHeartbeat{Node: node, IntervalMS: 5000, Sent: time.Date(2025, 1, 1, 0, 0, at, 0, time.UTC)}, at, "")
	}
	if err := e.prod.Append(e.ctx, events.TopicInventory, beat("n1", 5)); err != nil {
		t.Fatal(err)
	}
	for at := 10; at <= 30; at += 5 {
		e.append(beat("n1", at))
		if at <= 20 {
			e.append(beat("n2", at))
		}
	}
	e.run()
	var n1, n2 time.Time
	e.get(`SELECT (SELECT heartbeat_at FROM nodes WHERE name = 'n1'), (SELECT heartbeat_at FROM nodes WHERE name = 'n2')`, &n1, &n2)
	check(t, "heartbeats", []any{n1.UTC().Second(), n2.UTC().Second()}, []any{30, 20})
	var rows, old, undecodable int
	e.get(`SELECT count(*) FILTER (WHERE type = 'node.heartbeat'), count(*) FILTER (WHERE type = 'node.heartbeat' AND topic = 'drove.inventory'),
		(SELECT count(*) FROM undecodable_events) FROM event_log`, &rows, &old, &undecodable)
	check(t, "heartbeat rows in event_log (all, on drove.inventory) and undecodable records", []any{rows, old, undecodable}, []any{1, 1, 0})
	e.replayEqual()
}

// historyEvents counts the events of evs that event_log keeps: all but
// those of compacted topics (heartbeats), which are state only.
func historyEvents(evs []events.Envelope) int {
	n := 0
	for _, v := range evs {
		if topic, _ := v.Topic(); !events.Compacted(topic) {
			n++
		}
	}
	return n
}
