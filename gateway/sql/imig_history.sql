-- The progress history of per-instance migration $2 of instance $1: its
-- progress and end events (Request = the migration id), by seq, a page
-- at a time: after seq $3, at most $4.
SELECT seq, time, type, request_id, correlation_id, instance, payload
FROM {schema}.event_log
WHERE instance = $1
  AND type IN ('move.progress', 'move.end')
  AND payload->>'request' = $2
  AND seq > $3
ORDER BY seq
LIMIT $4
