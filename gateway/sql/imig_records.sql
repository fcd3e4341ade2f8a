-- Per-instance migrations (RFD 34): the projector's instance_migrations
-- view (the coordinator's latest record, with the progress of its latest
-- phase) and the instance's owner. Filters: $1 id, $2 instance, $3 state,
-- $4 owner, $5 node (source or target); cursor $6 (ids after it); $7 rows
-- at most. Empty strings filter nothing. A migration asked for but not
-- recorded by the coordinator yet has state ''.
SELECT m.id, m.instance, m.account, m.role, coalesce(i.owner, '') AS owner,
       m.source_node, m.target_node, m.automatic, m.state, m.phase, m.syncs,
       m.last_sync_bytes, m.scheduled_at, m.prior_run_state, m.switched, m.finalized,
       m.message, m.error, m.error_detail, m.created_at, m.started_at, m.finished_at,
       coalesce(m.updated_at, m.created_at) AS updated_at,
       m.current_bytes, m.total_bytes, m.eta_seconds, m.bytes_per_second, m.phase_running,
       m.downtime_ms, m.workload_downtime_ms, m.predicted_downtime_ms, m.max_downtime_ms
FROM {schema}.instance_migrations m
LEFT JOIN {schema}.instances i ON i.name = m.instance
WHERE ($1::text = '' OR m.id = $1)
  AND ($2::text = '' OR m.instance = $2)
  AND ($3::text = '' OR m.state = $3)
  AND ($4::text = '' OR i.owner = $4)
  AND ($5::text = '' OR m.source_node = $5 OR m.target_node = $5)
  AND m.id > $6
ORDER BY m.id
LIMIT $7
