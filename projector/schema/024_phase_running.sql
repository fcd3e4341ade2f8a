-- Whether a per-instance migration's latest phase is still under way, as
-- its record says (MigrationStateChanged.phase_running). The gateway
-- refuses a next step on it at once; the phases themselves are folded
-- from another topic (drove.opcodes), so a view joined to them could show
-- a phase running after the record that answers its end, and refuse a
-- step the coordinator would accept.
ALTER TABLE moves ADD COLUMN phase_running boolean NOT NULL DEFAULT false;

-- The view of 003 with the column added last (CREATE OR REPLACE keeps
-- the columns before it).
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
       m.phase_running
FROM moves m
LEFT JOIN LATERAL (
    SELECT x.* FROM moves x
    WHERE x.request = m.id AND x.kind = 'opcode' AND x.progress_time IS NOT NULL
    ORDER BY x.idx DESC
    LIMIT 1
) p ON true
WHERE m.kind = 'instance';
