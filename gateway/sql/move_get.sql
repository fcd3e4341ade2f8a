-- One move of a bulk request, the RFD 34 record.
SELECT m.id, m.request, m.job, m.idx, m.instance, coalesce(i.owner, '') AS account,
       m.source_node, m.target_node, m.op_id, m.automatic, m.state, m.phase,
       m.created_at, m.started_at, m.finished_at, m.end_state,
       m.progress_state, m.progress_time, m.current_bytes, m.total_bytes,
       m.eta_seconds, m.bytes_per_second, m.syncs, m.last_sync_bytes,
       m.progress_end_state, m.message, m.error, m.error_detail
FROM {schema}.move_state m
LEFT JOIN {schema}.instances i ON i.name = m.instance
WHERE m.id = $1
