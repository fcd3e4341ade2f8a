-- The tailer's poll: rows after the highest seq it has seen, in order.
SELECT seq, time, type, request_id, correlation_id, instance, payload
FROM {schema}.event_log
WHERE seq > $1
ORDER BY seq
LIMIT $2
