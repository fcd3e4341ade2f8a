-- The events of instance $1, by seq.
SELECT seq, time, type, request_id, correlation_id, instance, payload
FROM {schema}.event_log
WHERE instance = $1
ORDER BY seq
