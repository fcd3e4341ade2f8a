-- Requests by id, after the cursor $3, optionally of one status and kind.
SELECT id, kind, status, nodes, mode, instances, target_groups, dry_run,
       ignore_soft_errors, max_moves_per_node, actor, why, requested_at,
       approved_at, cancelled_at, rejected_at, rejected_reason, planned_at,
       plans, finished_at, moved, failed
FROM {schema}.request_status
WHERE ($1::text = '' OR status = $1)
  AND ($2::text = '' OR kind = $2)
  AND id > $3
ORDER BY id
LIMIT $4
