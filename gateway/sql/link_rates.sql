-- Recent sync progress with a measured rate, for estimates: among the
-- last $3 progress events, the source node's own first ($1), then any
-- node's, newest first, at most $2 rows. The window bounds what an
-- estimate reads however long the log is: ordering every progress event
-- ever took 405 ms an estimate on a log of 100,000 events.
SELECT node, bytes_per_second
FROM (SELECT coalesce(payload->>'node', '') AS node,
             coalesce((payload->>'bytes_per_second')::bigint, 0) AS bytes_per_second, seq
      FROM {schema}.event_log
      WHERE type = 'move.progress'
      ORDER BY seq DESC
      LIMIT $3) recent
WHERE bytes_per_second > 0
ORDER BY (node = $1) DESC, seq DESC
LIMIT $2
