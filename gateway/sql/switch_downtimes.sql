-- Recent switches that stopped their instance (a measured downtime), for
-- estimates: the source node's own first ($1), then any node's, newest
-- first, at most $2 rows.
SELECT node, downtime_ms
FROM {schema}.migration_phases
WHERE phase = 'switch' AND status = 'success' AND downtime_ms > 0
ORDER BY (node = $1) DESC, ended_at DESC NULLS LAST
LIMIT $2
