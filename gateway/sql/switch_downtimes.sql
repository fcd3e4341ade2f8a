-- Recent switches that stopped their instance (a measured downtime), for
-- estimates: the instance's own first ($3: the same runtime, the same
-- workload), then the source node's ($1), then any node's, newest first,
-- at most $2 rows.
SELECT instance, node, downtime_ms
FROM {schema}.migration_phases
WHERE phase = 'switch' AND status = 'success' AND downtime_ms > 0
ORDER BY (instance = $3) DESC, (node = $1) DESC, ended_at DESC NULLS LAST
LIMIT $2
