-- One request with its derived status.
SELECT id, kind, status, nodes, mode, instances, target_groups, dry_run,
       ignore_soft_errors, max_moves_per_node, actor, why, requested_at,
       approved_at, cancelled_at, rejected_at, rejected_reason, planned_at,
       plans, finished_at, moved, failed
FROM {schema}.request_status
WHERE id = $1
