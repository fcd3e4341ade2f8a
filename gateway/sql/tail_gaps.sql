-- The tailer's second look: rows whose seq it skipped because they were
-- not committed yet when it passed them (see tailer.go).
SELECT seq, time, type, request_id, correlation_id, instance, payload
FROM {schema}.event_log
WHERE seq = ANY($1::bigint[])
ORDER BY seq
