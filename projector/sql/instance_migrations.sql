-- Effects of per-instance migrations and settings (schema/003).

-- ---- drove.migrations (keyed by instance: one migration's events in order)

-- name: migration_asked
-- A command that may create a migration: the row exists from the first
-- command, and created_at is the earliest command's time whatever order
-- the commands are folded in.
INSERT INTO moves (id, request, job, idx, kind, instance, created_at)
VALUES ($1, $1, 0, 0, 'instance', $2, $3)
ON CONFLICT (id) DO UPDATE SET
    kind       = 'instance',
    instance   = EXCLUDED.instance,
    created_at = LEAST(moves.created_at, EXCLUDED.created_at)

-- name: migration_recorded
-- The coordinator's whole record: its columns are replaced. started_at is
-- the first time it ran; finished_at the time it last became aborted,
-- failed or successful (cleared while it runs again, as in a rollback).
INSERT INTO moves (id, request, job, idx, kind, instance, account, role, source_node, target_node,
                        automatic, record_state, queued, phase, syncs, last_sync_bytes, scheduled_at,
                        prior_run_state, switched, finalized, message, error, error_detail,
                        created_at, started_at, finished_at, updated_at, phase_running,
                        downtime_ms, workload_downtime_ms, predicted_downtime_ms, max_downtime_ms)
VALUES ($1, $1, 0, 0, 'instance', $2, $3, $4, $5, $6, $7, $8, $8 = 'queued', $9, $10, $11, $12,
        $13, $14, $15, $16, $17, $18,
        $19, CASE WHEN $8 = 'running' THEN $19::timestamptz END,
        CASE WHEN $8 IN ('aborted', 'failed', 'successful') THEN $19::timestamptz END, $19, $20,
        $21, $22, $23, $24)
ON CONFLICT (id) DO UPDATE SET
    kind            = 'instance',
    instance        = EXCLUDED.instance,
    account         = EXCLUDED.account,
    role            = EXCLUDED.role,
    source_node     = EXCLUDED.source_node,
    target_node     = EXCLUDED.target_node,
    automatic       = EXCLUDED.automatic,
    record_state    = EXCLUDED.record_state,
    queued          = EXCLUDED.queued,
    phase           = EXCLUDED.phase,
    syncs           = EXCLUDED.syncs,
    last_sync_bytes = EXCLUDED.last_sync_bytes,
    scheduled_at    = EXCLUDED.scheduled_at,
    prior_run_state = EXCLUDED.prior_run_state,
    switched        = EXCLUDED.switched,
    finalized       = EXCLUDED.finalized,
    message         = EXCLUDED.message,
    error           = EXCLUDED.error,
    error_detail    = EXCLUDED.error_detail,
    phase_running   = EXCLUDED.phase_running,
    downtime_ms     = EXCLUDED.downtime_ms,
    workload_downtime_ms = EXCLUDED.workload_downtime_ms,
    predicted_downtime_ms = EXCLUDED.predicted_downtime_ms,
    max_downtime_ms = EXCLUDED.max_downtime_ms,
    created_at      = LEAST(moves.created_at, EXCLUDED.created_at),
    started_at      = LEAST(moves.started_at, EXCLUDED.started_at),
    finished_at     = CASE WHEN EXCLUDED.finished_at IS NULL THEN NULL
                           ELSE coalesce(moves.finished_at, EXCLUDED.finished_at) END,
    updated_at      = EXCLUDED.updated_at

-- ---- drove.opcodes (keyed by node)

-- name: migration_phase_dispatched
INSERT INTO migration_phases (migration, seq, instance, phase, node, sync, send_mbps, dispatched_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (migration, seq) DO UPDATE SET
    instance      = EXCLUDED.instance,
    phase         = EXCLUDED.phase,
    node          = EXCLUDED.node,
    sync          = EXCLUDED.sync,
    send_mbps     = EXCLUDED.send_mbps,
    dispatched_at = EXCLUDED.dispatched_at

-- name: migration_phase_ended
-- The phase and instance only fill a row the dispatch has not made yet.
INSERT INTO migration_phases (migration, seq, instance, phase, node, ended_at, status, bytes, downtime_ms, error,
                              workload_downtime_ms, overhead_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (migration, seq) DO UPDATE SET
    ended_at    = EXCLUDED.ended_at,
    status      = EXCLUDED.status,
    bytes       = EXCLUDED.bytes,
    downtime_ms = EXCLUDED.downtime_ms,
    error       = EXCLUDED.error,
    workload_downtime_ms = EXCLUDED.workload_downtime_ms,
    overhead_ms = EXCLUDED.overhead_ms

-- ---- drove.settings (one key)

-- name: settings_changed
INSERT INTO settings (key, allow_user_migrations, max_running_migrations_per_node, send_mbps_limit,
                      resync_max_bytes, resync_max_syncs, resync_shrink_window,
                      progress_timeout_seconds, finalize_grace_seconds, updated_at, max_downtime_ms)
VALUES ('settings', $1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (key) DO UPDATE SET
    allow_user_migrations           = EXCLUDED.allow_user_migrations,
    max_running_migrations_per_node = EXCLUDED.max_running_migrations_per_node,
    send_mbps_limit                 = EXCLUDED.send_mbps_limit,
    resync_max_bytes                = EXCLUDED.resync_max_bytes,
    resync_max_syncs                = EXCLUDED.resync_max_syncs,
    resync_shrink_window            = EXCLUDED.resync_shrink_window,
    progress_timeout_seconds        = EXCLUDED.progress_timeout_seconds,
    finalize_grace_seconds          = EXCLUDED.finalize_grace_seconds,
    max_downtime_ms                 = EXCLUDED.max_downtime_ms,
    updated_at                      = EXCLUDED.updated_at

-- name: checksum_migration_phases
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5(to_jsonb(t)::text) AS h FROM migration_phases t) AS r

-- name: checksum_settings
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5(to_jsonb(t)::text) AS h FROM settings t) AS r
