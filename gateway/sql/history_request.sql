-- The events of request $1, by seq, a page at a time: after seq $2, at
-- most $3. The reason trail names the request (request_id);
-- correlation_id covers events written without one.
SELECT seq, time, type, request_id, correlation_id, instance, payload
FROM {schema}.event_log
WHERE (request_id = $1 OR correlation_id = $1)
  AND seq > $2
ORDER BY seq
LIMIT $3
