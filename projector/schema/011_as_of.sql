-- Point in time (issue 15): a schema folded by `drove replay --at` holds
-- the views as they stood at a bound of the log. as_of says which bound;
-- it is empty in the live schema and in replay schemas, whose bound is the
-- log's end. projector_offsets holds where each partition's fold stopped.
CREATE TABLE as_of (
    name      text        PRIMARY KEY, -- the schema's own name
    at        timestamptz,             -- the time bound, when given by time
    offsets   jsonb       NOT NULL,    -- {topic: {partition: next offset}}, when given by offsets
    events    bigint      NOT NULL,    -- records folded
    built_at  timestamptz NOT NULL     -- when the fold finished (wall clock: not part of the log)
);
