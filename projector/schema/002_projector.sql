-- What the projector needs beyond the views of 001.

-- Records that could not be folded: bytes that do not decode as an event
-- this build knows (events.Decode refused them), an event on a topic its
-- type does not belong to, or an event Postgres refused to store (a NUL
-- character in a string). The projector records them here, logs them and
-- moves on: one bad record must not freeze every view behind it. Keyed by
-- the record's place in the log, so replay records the same rows.
CREATE TABLE undecodable_events (
    topic     text   NOT NULL,
    partition int    NOT NULL,
    "offset"  bigint NOT NULL,
    key       bytea,
    value     bytea,
    error     text   NOT NULL,
    PRIMARY KEY (topic, partition, "offset")
);

-- The sync phases of each migration, one row per phase start seen in its
-- progress events, so that migrations.syncs and last_sync_bytes are
-- derived (count, and the bytes of the latest) instead of incremented: a
-- derived value cannot be counted twice.
CREATE TABLE migration_syncs (
    migration text        NOT NULL, -- migrations.id
    started   timestamptz NOT NULL, -- Progress.started of the sync phase
    bytes     bigint      NOT NULL, -- the largest total (or current) reported
    PRIMARY KEY (migration, started)
);
