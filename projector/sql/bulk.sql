-- A fold into a schema that holds nothing yet (Replay, AsOf, a live
-- projector's catch-up from an empty schema) loads the log at once, so the
-- indexes the fold itself never reads are dropped first and built after
-- it (bulk.go): one sort per index instead of a B-tree descent per row.

-- name: bulk_deferred_indexes
-- The indexes of schema $1 the fold does not need: every index but the
-- primary keys, which the upserts' ON CONFLICT and the check for logged
-- ids (event_log's) look rows up by. history_subjects' primary key goes
-- too: its rows go in by COPY only, each event's once, with its
-- event_log row. A constraint's index is dropped and added back as the
-- constraint (same name, same definition).
SELECT t.relname, i.relname, coalesce(c.conname, ''),
       coalesce(pg_get_constraintdef(c.oid), ''), pg_get_indexdef(i.oid)
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
LEFT JOIN pg_constraint c ON c.conindid = i.oid AND c.conrelid = t.oid AND c.contype IN ('p', 'u')
WHERE n.nspname = $1
  AND NOT (x.indisprimary AND t.relname <> 'history_subjects')
  AND t.relname <> 'projector_deferred_indexes'
ORDER BY t.relname, i.relname

-- name: bulk_deferred_record
INSERT INTO projector_deferred_indexes (name, table_name, constraint_name, constraint_def, index_def)
VALUES ($1, $2, $3, $4, $5)

-- name: bulk_deferred_pending
SELECT table_name, name, constraint_name, constraint_def, index_def
FROM projector_deferred_indexes ORDER BY table_name, name

-- name: bulk_deferred_built
DELETE FROM projector_deferred_indexes WHERE name = $1
