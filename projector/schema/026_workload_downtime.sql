-- A move's downtime as Drove measured it and as the instance's own
-- workload saw it (issue 30): the gap in the timeline the workload writes
-- with its data, from its last write on the source to its first on the
-- target, read on the target after the move. The migration record's
-- latest switch (MigrationStateChanged.downtime_ms and
-- workload_downtime_ms) and each phase's end (MigrationPhaseEnded); 0
-- before a switch or without a figure.
ALTER TABLE moves
    ADD COLUMN downtime_ms          bigint NOT NULL DEFAULT 0,
    ADD COLUMN workload_downtime_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE migration_phases
    ADD COLUMN workload_downtime_ms bigint NOT NULL DEFAULT 0;

-- The view of 024 with the two columns added last (CREATE OR REPLACE
-- keeps the columns before them).
CREATE OR REPLACE VIEW instance_migrations AS
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
       m.workload_downtime_ms
FROM moves m
LEFT JOIN LATERAL (
    SELECT x.* FROM moves x
    WHERE x.request = m.id AND x.kind = 'opcode' AND x.progress_time IS NOT NULL
    ORDER BY x.idx DESC
    LIMIT 1
) p ON true
WHERE m.kind = 'instance';
