-- The events of request $1, by seq, a page at a time: after seq $2, at
-- most $3. request_id is the reason trail's request, or the correlation id
-- of an event written without one; the decoder refuses an event whose two
-- differ, so request_id alone finds them all (schema 021 dropped the index
-- on correlation_id).
SELECT seq, time, type, request_id, correlation_id, instance, payload
FROM {schema}.event_log
WHERE request_id = $1
  AND seq > $2
ORDER BY seq
LIMIT $3
