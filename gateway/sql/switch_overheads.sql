-- Recent switches that stopped their instance, for the overhead of a
-- downtime prediction (stop and start): the newest $3 of each instance
-- named in $1 (the same runtime, the same workload), of each source node
-- named in $2, and of any node, newest first; the caller picks in that
-- order. One read for every move of a plan. A switch whose driver split
-- out its overhead gives that; one whose driver did not gives its whole
-- downtime, an upper bound of its overhead: the workload's when it saw
-- more (a QEMU switch of shared storage: QEMU's pause, then the guest's
-- resume and next write), the figure a tenant's budget is about.
SELECT instance, node, overhead_ms
FROM (SELECT instance, node, ended_at,
             CASE WHEN overhead_ms > 0 THEN overhead_ms
                  ELSE GREATEST(downtime_ms, workload_downtime_ms) END AS overhead_ms,
             row_number() OVER (PARTITION BY instance ORDER BY ended_at DESC NULLS LAST) AS of_instance,
             row_number() OVER (PARTITION BY node ORDER BY ended_at DESC NULLS LAST) AS of_node,
             row_number() OVER (ORDER BY ended_at DESC NULLS LAST) AS of_all
      FROM {schema}.migration_phases
      WHERE phase = 'switch' AND status = 'success' AND downtime_ms > 0) switches
WHERE (instance = ANY($1::text[]) AND of_instance <= $3)
   OR (node = ANY($2::text[]) AND of_node <= $3)
   OR of_all <= $3
ORDER BY ended_at DESC NULLS LAST
