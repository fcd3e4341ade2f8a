-- The projector's statements: the log, the checkpoint, and each event's
-- effect. Every effect is an upsert keyed by the event's own keys, and
-- writes only the columns its topic owns (see schema/001_views.sql), so
-- the views do not depend on the order partitions are read in.

-- name: event_log_known
-- Those of the batch's event ids ($1) already logged: their events are
-- duplicates, not applied again (eventlog.go).
SELECT id FROM event_log WHERE id = ANY($1::text[])

-- name: undecodable_insert
INSERT INTO undecodable_events (topic, partition, "offset", key, value, error)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (topic, partition, "offset") DO NOTHING

-- name: offset_set
INSERT INTO projector_offsets (topic, partition, next_offset)
VALUES ($1, $2, $3)
ON CONFLICT (topic, partition) DO UPDATE SET next_offset = EXCLUDED.next_offset

-- name: offsets_load
SELECT topic, partition, next_offset FROM projector_offsets

-- ---- drove.inventory

-- name: group_declared
INSERT INTO groups (name, alloc_policy, tags, updated_at)
VALUES ($1, $2, $3, $4)
ON CONFLICT (name) DO UPDATE SET
    alloc_policy = EXCLUDED.alloc_policy,
    tags         = EXCLUDED.tags,
    updated_at   = EXCLUDED.updated_at

-- name: node_stated
-- NodeAnnounced and NodeUpdated both restate the whole node; a new row
-- takes the node's last heartbeat if one was folded before it.
INSERT INTO nodes (name, group_name, total_memory_mib, total_disk_mib, total_cpus,
                   total_spindles, free_memory_mib, free_disk_mib, offline, drained,
                   vm_capable, tags, updated_at, heartbeat_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
        (SELECT heartbeat_at FROM node_heartbeats WHERE name = $1))
ON CONFLICT (name) DO UPDATE SET
    group_name       = EXCLUDED.group_name,
    total_memory_mib = EXCLUDED.total_memory_mib,
    total_disk_mib   = EXCLUDED.total_disk_mib,
    total_cpus       = EXCLUDED.total_cpus,
    total_spindles   = EXCLUDED.total_spindles,
    free_memory_mib  = EXCLUDED.free_memory_mib,
    free_disk_mib    = EXCLUDED.free_disk_mib,
    offline          = EXCLUDED.offline,
    drained          = EXCLUDED.drained,
    vm_capable       = EXCLUDED.vm_capable,
    tags             = EXCLUDED.tags,
    updated_at       = EXCLUDED.updated_at

-- name: instance_declared
-- Everything but group_name and last_request, which InstancePlaced owns.
-- Both are keyed by the instance, so they share a partition and their
-- order is the log's.
INSERT INTO instances (name, owner, memory_mib, vcpus, disk_mib, storage, run_state,
                       primary_node, secondary_node, tags, user_migration, updated_at, max_downtime_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (name) DO UPDATE SET
    owner          = EXCLUDED.owner,
    memory_mib     = EXCLUDED.memory_mib,
    vcpus          = EXCLUDED.vcpus,
    disk_mib       = EXCLUDED.disk_mib,
    storage        = EXCLUDED.storage,
    run_state      = EXCLUDED.run_state,
    primary_node   = EXCLUDED.primary_node,
    secondary_node = EXCLUDED.secondary_node,
    tags           = EXCLUDED.tags,
    user_migration = EXCLUDED.user_migration,
    updated_at     = EXCLUDED.updated_at,
    max_downtime_ms = EXCLUDED.max_downtime_ms

-- name: instance_placed
-- An instance placed before it was declared gets zero sizes until its
-- declaration; a placement no request made keeps the last request.
INSERT INTO instances (name, memory_mib, vcpus, disk_mib, storage, run_state,
                       group_name, primary_node, secondary_node, last_request, updated_at)
VALUES ($1, 0, 0, 0, '', '', $2, $3, $4, $5, $6)
ON CONFLICT (name) DO UPDATE SET
    group_name     = EXCLUDED.group_name,
    primary_node   = EXCLUDED.primary_node,
    secondary_node = EXCLUDED.secondary_node,
    last_request   = CASE WHEN EXCLUDED.last_request <> '' THEN EXCLUDED.last_request
                          ELSE instances.last_request END,
    updated_at     = EXCLUDED.updated_at

-- ---- drove.requests

-- name: evacuation_requested
INSERT INTO requests (id, kind, nodes, mode, dry_run, ignore_soft_errors,
                      max_moves_per_node, actor, why, requested_at)
VALUES ($1, 'evacuation', $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (id) DO UPDATE SET
    kind               = EXCLUDED.kind,
    nodes              = EXCLUDED.nodes,
    mode               = EXCLUDED.mode,
    dry_run            = EXCLUDED.dry_run,
    ignore_soft_errors = EXCLUDED.ignore_soft_errors,
    max_moves_per_node = EXCLUDED.max_moves_per_node,
    actor              = EXCLUDED.actor,
    why                = EXCLUDED.why,
    requested_at       = EXCLUDED.requested_at

-- name: group_change_requested
INSERT INTO requests (id, kind, instances, target_groups, actor, why, requested_at, dry_run)
VALUES ($1, 'group-change', $2, $3, $4, $5, $6, $7)
ON CONFLICT (id) DO UPDATE SET
    kind          = EXCLUDED.kind,
    instances     = EXCLUDED.instances,
    target_groups = EXCLUDED.target_groups,
    dry_run       = EXCLUDED.dry_run,
    actor         = EXCLUDED.actor,
    why           = EXCLUDED.why,
    requested_at  = EXCLUDED.requested_at

-- name: request_approved
INSERT INTO requests (id, approved_at) VALUES ($1, $2)
ON CONFLICT (id) DO UPDATE SET approved_at = EXCLUDED.approved_at

-- name: request_cancelled
INSERT INTO requests (id, cancelled_at) VALUES ($1, $2)
ON CONFLICT (id) DO UPDATE SET cancelled_at = EXCLUDED.cancelled_at

-- name: request_rejected
INSERT INTO requests (id, rejected_at, rejected_reason) VALUES ($1, $2, $3)
ON CONFLICT (id) DO UPDATE SET
    rejected_at     = EXCLUDED.rejected_at,
    rejected_reason = EXCLUDED.rejected_reason

-- name: request_finished
INSERT INTO requests (id, finished_at, moved, failed) VALUES ($1, $2, $3, $4)
ON CONFLICT (id) DO UPDATE SET
    finished_at = EXCLUDED.finished_at,
    moved       = EXCLUDED.moved,
    failed      = EXCLUDED.failed

-- ---- drove.plans

-- name: plan_computed
INSERT INTO plans (request, moved, failed, jobs, score_before, score_after, computed_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (request) DO UPDATE SET
    moved        = EXCLUDED.moved,
    failed       = EXCLUDED.failed,
    jobs         = EXCLUDED.jobs,
    score_before = EXCLUDED.score_before,
    score_after  = EXCLUDED.score_after,
    computed_at  = EXCLUDED.computed_at

-- name: plan_part
-- A later part of a plan in parts: its lists extend the first part's.
UPDATE plans SET
    moved  = moved || $2::jsonb,
    failed = failed || $3::jsonb,
    jobs   = jobs || $4::jsonb
WHERE request = $1

-- name: request_planned
-- Counting is safe because an event's effect runs only when its event_log
-- row is new, and addition does not care about order.
INSERT INTO requests (id, planned_at, plans) VALUES ($1, $2, 1)
ON CONFLICT (id) DO UPDATE SET
    planned_at = EXCLUDED.planned_at,
    plans      = requests.plans + 1

-- name: plan_jobs
-- $2 is the plan's jobs as JSON; a job's instance is its first opcode's.
INSERT INTO jobs (request, idx, instance, opcodes, depends)
SELECT $1, (j->>'index')::int, coalesce(j->'opcodes'->0->>'instance', ''),
       coalesce(j->'opcodes', '[]'), coalesce(j->'depends', '[]')
FROM jsonb_array_elements($2::jsonb) AS j
ON CONFLICT (request, idx) DO UPDATE SET
    instance = EXCLUDED.instance,
    opcodes  = EXCLUDED.opcodes,
    depends  = EXCLUDED.depends

-- name: plan_jobs_dropped
-- Jobs of an earlier plan of the request that the new plan no longer has
-- keep their lifecycle but lose their plan columns.
UPDATE jobs SET instance = '', opcodes = '[]', depends = '[]'
WHERE request = $1 AND idx >= $2

-- ---- drove.jobs

-- name: job_released
INSERT INTO jobs (request, idx, released_at) VALUES ($1, $2, $3)
ON CONFLICT (request, idx) DO UPDATE SET released_at = EXCLUDED.released_at

-- name: job_cancelled
INSERT INTO jobs (request, idx, cancelled_at, cancel_reason) VALUES ($1, $2, $3, $4)
ON CONFLICT (request, idx) DO UPDATE SET
    cancelled_at  = EXCLUDED.cancelled_at,
    cancel_reason = EXCLUDED.cancel_reason

-- name: job_ended
INSERT INTO jobs (request, idx, ended_at, status, error) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (request, idx) DO UPDATE SET
    ended_at = EXCLUDED.ended_at,
    status   = EXCLUDED.status,
    error    = EXCLUDED.error

-- ---- drove.opcodes

-- name: opcode_dispatched
INSERT INTO opcodes (request, job, idx, node, op_id, instance, from_node, to_node, dispatched_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (request, job, idx) DO UPDATE SET
    node          = EXCLUDED.node,
    op_id         = EXCLUDED.op_id,
    instance      = EXCLUDED.instance,
    from_node     = EXCLUDED.from_node,
    to_node       = EXCLUDED.to_node,
    dispatched_at = EXCLUDED.dispatched_at

-- name: move_dispatched
-- $1 is request/job/idx. The instance is the opcode's: progress events set
-- it only when they create the row, so the dispatch always has the last
-- word whatever the order.
INSERT INTO moves (id, request, job, idx, instance, source_node, target_node, op_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (id) DO UPDATE SET
    instance    = EXCLUDED.instance,
    source_node = EXCLUDED.source_node,
    target_node = EXCLUDED.target_node,
    op_id       = EXCLUDED.op_id,
    created_at  = EXCLUDED.created_at

-- name: opcode_started
INSERT INTO opcodes (request, job, idx, started_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (request, job, idx) DO UPDATE SET started_at = EXCLUDED.started_at

-- name: move_started
INSERT INTO moves (id, request, job, idx, started_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (id) DO UPDATE SET started_at = EXCLUDED.started_at

-- name: opcode_cancelled
INSERT INTO opcodes (request, job, idx, cancel_requested_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (request, job, idx) DO UPDATE SET cancel_requested_at = EXCLUDED.cancel_requested_at

-- name: opcode_ended
INSERT INTO opcodes (request, job, idx, ended_at, status, error) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (request, job, idx) DO UPDATE SET
    ended_at = EXCLUDED.ended_at,
    status   = EXCLUDED.status,
    error    = EXCLUDED.error

-- name: move_ended
INSERT INTO moves (id, request, job, idx, finished_at, end_state, error)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (id) DO UPDATE SET
    finished_at = EXCLUDED.finished_at,
    end_state   = EXCLUDED.end_state,
    error       = EXCLUDED.error

-- ---- drove.progress

-- name: move_progress
-- Applied only when newer than what the row shows, so the latest progress
-- wins whatever order the events come in. A progress after an end (a
-- paused move resumed) clears the end state. An event's error replaces
-- the row's; one without keeps it. A batch's run of progress events
-- merged into one statement (coalesce.go) whose last error is not its
-- last event's is sent as two: the error at its event's time, then the
-- rest (progressRow.stmts). Every parameter lies in the VALUES tuple, so
-- the statements of many moves merge into one (batch.go).
INSERT INTO moves (id, request, job, idx, instance, phase, progress_state, progress_time,
                        current_bytes, total_bytes, eta_seconds, bytes_per_second, message,
                        error_detail, progress_end_state)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, '')
ON CONFLICT (id) DO UPDATE SET
    phase              = EXCLUDED.phase,
    progress_state     = EXCLUDED.progress_state,
    progress_time      = EXCLUDED.progress_time,
    current_bytes      = EXCLUDED.current_bytes,
    total_bytes        = EXCLUDED.total_bytes,
    eta_seconds        = EXCLUDED.eta_seconds,
    bytes_per_second   = EXCLUDED.bytes_per_second,
    message            = EXCLUDED.message,
    error_detail       = CASE WHEN EXCLUDED.error_detail <> '' THEN EXCLUDED.error_detail
                              ELSE moves.error_detail END,
    progress_end_state = ''
WHERE moves.progress_time IS NULL OR moves.progress_time <= EXCLUDED.progress_time

-- name: move_end
INSERT INTO moves (id, request, job, idx, instance, phase, progress_end_state, message, progress_time)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (id) DO UPDATE SET
    phase              = EXCLUDED.phase,
    progress_end_state = EXCLUDED.progress_end_state,
    message            = EXCLUDED.message,
    progress_time      = EXCLUDED.progress_time
WHERE moves.progress_time IS NULL OR moves.progress_time <= EXCLUDED.progress_time

-- name: sync_seen
INSERT INTO move_syncs (move, started, bytes) VALUES ($1, $2, $3)
ON CONFLICT (move, started) DO UPDATE SET
    bytes = greatest(move_syncs.bytes, EXCLUDED.bytes)

-- name: syncs_derive
-- Once per batch, for every move ($1) whose sync phases the batch saw: the
-- moves found by their key, each one's syncs by the key's prefix, so the
-- cost follows the batch and not the size of the tables.
UPDATE moves m SET (syncs, last_sync_bytes) =
    (SELECT count(*), coalesce((array_agg(bytes ORDER BY started DESC))[1], 0)
     FROM move_syncs WHERE move = m.id)
WHERE m.id = ANY($1::text[])

-- name: move_status
-- The latest report of each node wins, by the event's time.
INSERT INTO move_status (request, instance, node, status, time) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (request, instance, node) DO UPDATE SET
    status = EXCLUDED.status,
    time   = EXCLUDED.time
WHERE move_status.time <= EXCLUDED.time
