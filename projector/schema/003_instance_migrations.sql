-- Per-instance migrations (RFD 34), the phases the coordinator dispatched
-- for them, and the operators' settings. The rules of 001 hold: upserts
-- keyed by the events' own keys, disjoint columns per topic, times from
-- the events.

-- A per-instance migration is a row of migrations keyed by its migration
-- id, with kind 'instance'; its record columns come from the latest
-- MigrationStateChanged (the coordinator's whole record, all on
-- drove.migrations keyed by instance, so in log order). Its phases'
-- progress and end events (Request = the migration id, Job 0, Index = the
-- phase's seq) fold as before into rows 'id/0/seq' of kind 'opcode': the
-- instance_migrations view below takes the latest of them as the
-- migration's progress, and migration_state leaves them out.
ALTER TABLE migrations
    ADD COLUMN kind            text        NOT NULL DEFAULT 'opcode', -- opcode | instance
    ADD COLUMN account         text        NOT NULL DEFAULT '',
    ADD COLUMN role            text        NOT NULL DEFAULT '',       -- operator | owner
    ADD COLUMN record_state    text        NOT NULL DEFAULT '',       -- RFD 34 state, as recorded
    ADD COLUMN queued          boolean     NOT NULL DEFAULT false,    -- record_state = 'queued'
    ADD COLUMN scheduled_at    timestamptz,
    ADD COLUMN prior_run_state text        NOT NULL DEFAULT '',
    ADD COLUMN switched        boolean     NOT NULL DEFAULT false,
    ADD COLUMN finalized       boolean     NOT NULL DEFAULT false,
    ADD COLUMN updated_at      timestamptz;                           -- time of the latest record
CREATE INDEX migrations_request ON migrations (request);

-- The phases of per-instance migrations as dispatched (MigrationPhaseDispatched)
-- and ended (MigrationPhaseEnded); both on drove.opcodes keyed by node.
CREATE TABLE migration_phases (
    migration     text        NOT NULL,
    seq           int         NOT NULL,
    instance      text        NOT NULL DEFAULT '',
    phase         text        NOT NULL DEFAULT '', -- begin | sync | switch | abort | rollback | finalize
    node          text        NOT NULL DEFAULT '',
    sync          int         NOT NULL DEFAULT 0,
    send_mbps     double precision NOT NULL DEFAULT 0,
    dispatched_at timestamptz,
    ended_at      timestamptz,
    status        text        NOT NULL DEFAULT '', -- success | error | canceled, once ended
    bytes         bigint      NOT NULL DEFAULT 0,
    downtime_ms   bigint      NOT NULL DEFAULT 0,
    error         text        NOT NULL DEFAULT '',
    PRIMARY KEY (migration, seq)
);

-- The settings in force: the latest SettingsChanged (one key, one row).
CREATE TABLE settings (
    key                             text        PRIMARY KEY, -- 'settings'
    allow_user_migrations           boolean     NOT NULL,
    max_running_migrations_per_node int         NOT NULL,
    send_mbps_limit                 double precision NOT NULL,
    resync_max_bytes                bigint      NOT NULL,
    resync_max_syncs                int         NOT NULL,
    resync_shrink_window            int         NOT NULL,
    progress_timeout_seconds        int         NOT NULL,
    finalize_grace_seconds          int         NOT NULL,
    updated_at                      timestamptz NOT NULL
);

-- migration_state keeps its meaning: moves of bulk requests (opcodes).
-- Per-instance migrations and their phase rows are left out; they are in
-- instance_migrations.
DROP VIEW migration_state;
CREATE VIEW migration_state AS
SELECT m.*,
       CASE
         WHEN m.end_state = 'success' THEN 'successful'
         WHEN m.end_state = 'error' THEN 'failed'
         WHEN m.end_state = 'canceled' THEN 'aborted'
         WHEN m.started_at IS NOT NULL THEN 'running'
         ELSE 'scheduled'
       END AS state
FROM migrations m
WHERE m.kind = 'opcode'
  AND NOT EXISTS (SELECT 1 FROM migrations x WHERE x.id = m.request AND x.kind = 'instance')
  AND NOT EXISTS (SELECT 1 FROM migration_phases ph WHERE ph.migration = m.request);

-- Per-instance migrations: the RFD 34 record, with the progress of its
-- latest phase that reported any.
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
       coalesce(p.progress_end_state, '') AS progress_end_state
FROM migrations m
LEFT JOIN LATERAL (
    SELECT x.* FROM migrations x
    WHERE x.request = m.id AND x.kind = 'opcode' AND x.progress_time IS NOT NULL
    ORDER BY x.idx DESC
    LIMIT 1
) p ON true
WHERE m.kind = 'instance';
