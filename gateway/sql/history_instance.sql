-- The events of instance $1, by seq, a page at a time: after seq $2, at
-- most $3.
SELECT seq, time, type, request_id, correlation_id, instance, payload
FROM {schema}.event_log
WHERE instance = $1
  AND seq > $2
ORDER BY seq
LIMIT $3
