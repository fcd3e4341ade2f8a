-- A fold into a fresh schema (Replay, AsOf) loads the whole log at once,
-- so the indexes the fold itself never reads are dropped first and built
-- after it (bulk.go): one sort per index instead of a B-tree descent per
-- row.

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
ORDER BY t.relname, i.relname
