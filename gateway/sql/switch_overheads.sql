-- Recent switches that stopped their instance, for the overhead of a
-- downtime prediction (stop and start): the instance's own first
-- ($3: the same runtime, the same workload), then the source node's ($1),
-- then any node's, newest first, at most $2 rows. A switch whose driver
-- split out its overhead gives that; one whose driver did not gives its
-- whole downtime, an upper bound of its overhead.
SELECT instance, node, CASE WHEN overhead_ms > 0 THEN overhead_ms ELSE downtime_ms END AS overhead_ms
FROM {schema}.migration_phases
WHERE phase = 'switch' AND status = 'success' AND downtime_ms > 0
ORDER BY (instance = $3) DESC, (node = $1) DESC, ended_at DESC NULLS LAST
LIMIT $2
