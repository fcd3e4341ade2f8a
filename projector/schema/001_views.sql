-- Drove's queryable views, folded from the event log by the projector.
--
-- Rules that keep a replay from offset zero equal to the live views:
--   * every row is written with upserts keyed by the event's own keys, so
--     applying an event twice changes nothing;
--   * a table fed by several topics takes disjoint columns from each, so the
--     order in which partitions of different topics are read does not
--     matter (Kafka orders events only within a partition);
--   * derived states (a request's status) are computed in views at read
--     time, not stored (views.sql, made again on every ApplySchema);
--   * nothing stores the projection's own clock: every time is an event's.
-- The columns replay compares are those of the tables below except
-- event_log.seq, which numbers rows in the order this projector saw them.

-- Where the projector is in each partition: written in the same transaction
-- as the effect of the event at next_offset - 1.
CREATE TABLE projector_offsets (
    topic       text   NOT NULL,
    partition   int    NOT NULL,
    next_offset bigint NOT NULL,
    PRIMARY KEY (topic, partition)
);

-- Every event, as appended. Watch streams read it: history first (by seq),
-- then live rows as they arrive.
CREATE TABLE event_log (
    id             text        PRIMARY KEY,
    seq            bigserial   NOT NULL UNIQUE,
    topic          text        NOT NULL,
    partition      int         NOT NULL,
    "offset"       bigint      NOT NULL,
    type           text        NOT NULL,
    version        int         NOT NULL,
    time           timestamptz NOT NULL,
    key            text        NOT NULL,
    correlation_id text        NOT NULL DEFAULT '',
    causation_id   text        NOT NULL DEFAULT '',
    producer       text        NOT NULL DEFAULT '',
    actor          text        NOT NULL DEFAULT '',
    why            text        NOT NULL DEFAULT '',
    request_id     text        NOT NULL DEFAULT '', -- reason trail: the request behind it
    instance       text        NOT NULL DEFAULT '', -- payload's instance, if any, for watch filters
    payload        jsonb       NOT NULL,
    UNIQUE (topic, partition, "offset")
);
CREATE INDEX event_log_request ON event_log (request_id, seq);
CREATE INDEX event_log_correlation ON event_log (correlation_id, seq);
CREATE INDEX event_log_instance ON event_log (instance, seq);

-- Inventory (drove.inventory).
CREATE TABLE groups (
    name         text        PRIMARY KEY,
    alloc_policy text        NOT NULL,
    tags         text[]      NOT NULL DEFAULT '{}',
    updated_at   timestamptz NOT NULL
);

CREATE TABLE nodes (
    name            text        PRIMARY KEY,
    group_name      text        NOT NULL,
    total_memory_mib bigint     NOT NULL,
    total_disk_mib  bigint      NOT NULL,
    total_cpus      int         NOT NULL,
    total_spindles  int         NOT NULL DEFAULT 0,
    free_memory_mib bigint      NOT NULL,
    free_disk_mib   bigint      NOT NULL,
    offline         boolean     NOT NULL,
    drained         boolean     NOT NULL,
    vm_capable      boolean     NOT NULL,
    tags            text[]      NOT NULL DEFAULT '{}',
    updated_at      timestamptz NOT NULL
);

CREATE TABLE instances (
    name           text        PRIMARY KEY,
    owner          text        NOT NULL DEFAULT '',
    memory_mib     bigint      NOT NULL,
    vcpus          int         NOT NULL,
    disk_mib       bigint      NOT NULL, -- sum of its disks
    storage        text        NOT NULL,
    run_state      text        NOT NULL,
    group_name     text        NOT NULL DEFAULT '',
    primary_node   text        NOT NULL,
    secondary_node text        NOT NULL DEFAULT '',
    tags           text[]      NOT NULL DEFAULT '{}',
    user_migration boolean,              -- null: follows the global setting
    last_request   text        NOT NULL DEFAULT '', -- the request that last moved it
    updated_at     timestamptz NOT NULL
);
CREATE INDEX instances_primary ON instances (primary_node);
CREATE INDEX instances_secondary ON instances (secondary_node);

-- Requests (drove.requests); planned_at and the plan summary come from
-- drove.plans, finished_* from RequestFinished.
CREATE TABLE requests (
    id                 text        PRIMARY KEY,
    kind               text        NOT NULL DEFAULT '', -- evacuation | group-change
    nodes              text[]      NOT NULL DEFAULT '{}',
    mode               text        NOT NULL DEFAULT '',
    instances          text[]      NOT NULL DEFAULT '{}',
    target_groups      text[]      NOT NULL DEFAULT '{}',
    dry_run            boolean     NOT NULL DEFAULT false,
    ignore_soft_errors boolean     NOT NULL DEFAULT false,
    max_moves_per_node int         NOT NULL DEFAULT 0,
    actor              text        NOT NULL DEFAULT '',
    why                text        NOT NULL DEFAULT '',
    requested_at       timestamptz,
    approved_at        timestamptz,
    cancelled_at       timestamptz,
    rejected_at        timestamptz,
    rejected_reason    text        NOT NULL DEFAULT '',
    planned_at         timestamptz,
    plans              int         NOT NULL DEFAULT 0, -- how many plans (a stale plan is refreshed)
    finished_at        timestamptz,
    moved              jsonb, -- RequestFinished: [{instance, group, nodes}]
    failed             jsonb  -- RequestFinished: [{instance, reason}]
);

-- The latest plan of each request (drove.plans).
CREATE TABLE plans (
    request      text        PRIMARY KEY,
    moved        jsonb       NOT NULL,
    failed       jsonb       NOT NULL,
    jobs         jsonb       NOT NULL,
    score_before double precision NOT NULL,
    score_after  double precision NOT NULL,
    computed_at  timestamptz NOT NULL
);

-- Jobs: instance, opcodes and depends from the plan (drove.plans); the
-- lifecycle from drove.jobs.
CREATE TABLE jobs (
    request       text        NOT NULL,
    idx           int         NOT NULL,
    instance      text        NOT NULL DEFAULT '',
    opcodes       jsonb       NOT NULL DEFAULT '[]',
    depends       jsonb       NOT NULL DEFAULT '[]', -- Ganeti's relative form
    released_at   timestamptz,
    cancelled_at  timestamptz,
    cancel_reason text        NOT NULL DEFAULT '',
    ended_at      timestamptz,
    status        text        NOT NULL DEFAULT '', -- success | error | canceled, once ended
    error         text        NOT NULL DEFAULT '',
    PRIMARY KEY (request, idx)
);

-- Opcodes as dispatched to and run by executors (drove.opcodes).
CREATE TABLE opcodes (
    request       text        NOT NULL,
    job           int         NOT NULL,
    idx           int         NOT NULL,
    node          text        NOT NULL DEFAULT '',
    op_id         text        NOT NULL DEFAULT '',
    instance      text        NOT NULL DEFAULT '',
    from_node     text        NOT NULL DEFAULT '',
    to_node       text        NOT NULL DEFAULT '',
    dispatched_at timestamptz,
    started_at    timestamptz,
    cancel_requested_at timestamptz,
    ended_at      timestamptz,
    status        text        NOT NULL DEFAULT '', -- success | error | canceled, once ended
    error         text        NOT NULL DEFAULT '',
    PRIMARY KEY (request, job, idx)
);

-- Migrations: one per moving opcode, the RFD 34 record. Identity and
-- lifecycle from drove.opcodes; phase, progress and bytes from
-- drove.progress.
CREATE TABLE migrations (
    id               text        PRIMARY KEY, -- request/job/idx
    request          text        NOT NULL,
    job              int         NOT NULL,
    idx              int         NOT NULL,
    instance         text        NOT NULL DEFAULT '',
    source_node      text        NOT NULL DEFAULT '',
    target_node      text        NOT NULL DEFAULT '',
    op_id            text        NOT NULL DEFAULT '',
    automatic        boolean     NOT NULL DEFAULT true,
    created_at       timestamptz,
    started_at       timestamptz,
    finished_at      timestamptz,
    end_state        text        NOT NULL DEFAULT '', -- from OpcodeEnded: success | error | canceled
    phase            text        NOT NULL DEFAULT '', -- latest progress event
    progress_state   text        NOT NULL DEFAULT '',
    progress_time    timestamptz,                     -- time of the latest progress event
    current_bytes    bigint      NOT NULL DEFAULT 0,
    total_bytes      bigint      NOT NULL DEFAULT 0,
    eta_seconds      double precision NOT NULL DEFAULT 0,
    bytes_per_second bigint      NOT NULL DEFAULT 0,
    syncs            int         NOT NULL DEFAULT 0, -- sync phases seen
    last_sync_bytes  bigint      NOT NULL DEFAULT 0,
    progress_end_state text      NOT NULL DEFAULT '', -- from the End event: paused | successful | failed
    message          text        NOT NULL DEFAULT '',
    error            text        NOT NULL DEFAULT '',
    error_detail     text        NOT NULL DEFAULT ''
);
CREATE INDEX migrations_instance ON migrations (instance);

-- What each node said of an instance during a move (oVirt's model).
CREATE TABLE move_status (
    request  text        NOT NULL,
    instance text        NOT NULL,
    node     text        NOT NULL,
    status   text        NOT NULL,
    time     timestamptz NOT NULL,
    PRIMARY KEY (request, instance, node)
);
