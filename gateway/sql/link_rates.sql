-- Recent sends with a measured rate, for estimates: among the last $1
-- progress events, those that reported a rate, newest first, each with
-- its node. The caller picks a node's own, else any node's. The window
-- bounds what an estimate reads however long the log is, and one read
-- serves every node of a plan: ordering every progress event ever took
-- 405 ms an estimate on a log of 100,000 events.
SELECT node, bytes_per_second
FROM (SELECT coalesce(payload->>'node', '') AS node,
             coalesce((payload->>'bytes_per_second')::bigint, 0) AS bytes_per_second, seq
      FROM {schema}.event_log
      WHERE type = 'move.progress'
      ORDER BY seq DESC
      LIMIT $1) recent
WHERE bytes_per_second > 0
ORDER BY seq DESC
