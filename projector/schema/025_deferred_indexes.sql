-- Indexes a bulk fold dropped and has yet to build (projector/bulk.go,
-- issue 32): a fold that loads a whole log into a schema that holds
-- nothing yet (Replay, AsOf, and a live projector starting on an empty
-- schema far behind the log) builds the indexes it does not read once,
-- after the load, instead of inserting into them row by row. Each is
-- recorded here in the transaction that drops it and deleted in the one
-- that builds it, so a projector that stops half way builds them when it
-- next catches up.
CREATE TABLE projector_deferred_indexes (
    name            text PRIMARY KEY, -- the index
    table_name      text NOT NULL,
    constraint_name text NOT NULL,    -- the constraint it backs, or ''
    constraint_def  text NOT NULL,    -- pg_get_constraintdef, or ''
    index_def       text NOT NULL     -- pg_get_indexdef: CREATE INDEX ..., schema-qualified
);
