-- Moves of bulk requests by id after the cursor $4, optionally of one instance, one
-- state, one node (as source or target) and one owner ($6).
SELECT m.id, m.request, m.job, m.idx, m.instance, coalesce(i.owner, '') AS account,
       m.source_node, m.target_node, m.op_id, m.automatic, m.state, m.phase,
       m.created_at, m.started_at, m.finished_at, m.end_state,
       m.progress_state, m.progress_time, m.current_bytes, m.total_bytes,
       m.eta_seconds, m.bytes_per_second, m.syncs, m.last_sync_bytes,
       m.progress_end_state, m.message, m.error, m.error_detail
FROM {schema}.move_state m
LEFT JOIN {schema}.instances i ON i.name = m.instance
WHERE ($1::text = '' OR m.instance = $1)
  AND ($2::text = '' OR m.state = $2)
  AND ($3::text = '' OR m.source_node = $3 OR m.target_node = $3)
  AND ($6::text = '' OR i.owner = $6)
  AND m.id > $4
ORDER BY m.id
LIMIT $5
