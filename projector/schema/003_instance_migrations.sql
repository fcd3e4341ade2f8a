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
-- instance_migrations view (views.sql) takes the latest of them as the
-- migration's progress, and move_state leaves them out.
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
