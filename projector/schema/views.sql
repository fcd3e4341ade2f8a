-- Every view of the schema, in one place. Views hold no data: when
-- ApplySchema applies any numbered file, it drops every view of the schema
-- and runs this file after them, in the one transaction that applies them,
-- so a view always reads the tables as the numbered files left them (a
-- column added to a table is a line here, not a copy of the whole view in
-- a new numbered file), and a fresh schema and an upgraded one get the
-- same views. So a change here comes with a numbered file (the column it
-- reads, or a comment), which is also what makes an existing schema take
-- it; and a build leaves the views of a schema newer than itself alone, so
-- an older build starting beside the new one does not put its views back.

-- A request's status, derived from its timestamps.
CREATE VIEW request_status AS
SELECT r.*,
       CASE
         WHEN r.finished_at IS NOT NULL THEN 'finished'
         WHEN r.rejected_at IS NOT NULL THEN 'rejected'
         WHEN r.cancelled_at IS NOT NULL THEN 'cancelling'
         WHEN r.planned_at IS NULL THEN 'planning'
         WHEN r.dry_run AND r.approved_at IS NULL THEN 'awaiting-approval'
         ELSE 'running'
       END AS status
FROM requests r;

-- A move's RFD 34 state, derived: moves of bulk requests (opcodes) only,
-- those a dispatch has dated (created_at: only opcode.dispatched writes
-- it, so a move shows once its dispatch is folded, whatever the order of
-- its events). Per-instance migrations (kind 'instance') and their
-- phases' rows (progress only, never dispatched as opcodes) are left
-- out; they are in instance_migrations. The index moves_dispatched
-- (schema/028) holds exactly these rows.
CREATE VIEW move_state AS
SELECT m.*,
       CASE
         WHEN m.end_state = 'success' THEN 'successful'
         WHEN m.end_state = 'error' THEN 'failed'
         WHEN m.end_state = 'canceled' THEN 'aborted'
         WHEN m.started_at IS NOT NULL THEN 'running'
         ELSE 'scheduled'
       END AS state
FROM moves m
WHERE m.kind = 'opcode' AND m.created_at IS NOT NULL;

-- Per-instance migrations (schema/003): the RFD 34 record, with the
-- progress of its latest phase that reported any.
CREATE VIEW instance_migrations AS
SELECT m.id, m.instance, m.account, m.role, m.source_node, m.target_node, m.automatic,
       m.record_state AS state, m.phase, m.syncs, m.last_sync_bytes, m.scheduled_at,
       m.prior_run_state, m.switched, m.finalized, m.queued, m.message, m.error, m.error_detail,
       m.created_at, m.started_at, m.finished_at, m.updated_at,
       coalesce(p.phase, '') AS progress_phase,
       p.progress_time,
       coalesce(p.current_bytes, 0) AS current_bytes,
       coalesce(p.total_bytes, 0) AS total_bytes,
       coalesce(p.eta_seconds, 0) AS eta_seconds,
       coalesce(p.bytes_per_second, 0) AS bytes_per_second,
       coalesce(p.progress_end_state, '') AS progress_end_state,
       m.phase_running,
       m.downtime_ms,
       m.workload_downtime_ms,
       m.predicted_downtime_ms,
       m.max_downtime_ms
FROM moves m
LEFT JOIN LATERAL (
    SELECT x.* FROM moves x
    WHERE x.request = m.id AND x.kind = 'opcode' AND x.progress_time IS NOT NULL
    ORDER BY x.idx DESC
    LIMIT 1
) p ON true
WHERE m.kind = 'instance';
