-- Recent sync progress with a measured rate, for estimates: the source
-- node's own first ($1), then any node's, newest first, at most $2 rows.
SELECT coalesce(payload->>'node', '') AS node,
       (payload->>'bytes_per_second')::bigint AS bytes_per_second
FROM {schema}.event_log
WHERE type = 'move.progress'
  AND coalesce((payload->>'bytes_per_second')::bigint, 0) > 0
ORDER BY (payload->>'node' = $1) DESC, seq DESC
LIMIT $2
