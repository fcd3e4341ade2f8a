-- Per-instance migrations (RFD 34), each as its latest MigrationStateChanged
-- (the coordinator's whole record) with its times: created when first
-- asked for, started when first running, finished when it last reached
-- aborted, failed or successful. Filters: $1 id, $2 instance, $3 state,
-- $4 owner (the instance's), $5 node (source or target); cursor $6 (ids
-- after it); $7 rows at most. Progress is the latest progress event's. Empty strings filter nothing.
WITH ev AS (
  SELECT seq, time, type, payload->>'migration' AS id, payload
  FROM {schema}.event_log
  WHERE type IN ('migration.state_changed', 'migration.action_requested')
    AND ($1::text = '' OR payload->>'migration' = $1)
    AND ($2::text = '' OR payload->>'instance' = $2)
), agg AS (
  SELECT id,
         min(time) AS created_at,
         min(time) FILTER (WHERE type = 'migration.state_changed' AND payload->>'state' = 'running') AS started_at,
         max(seq) FILTER (WHERE type = 'migration.state_changed') AS last_seq
  FROM ev
  GROUP BY id
)
SELECT a.id, l.payload->>'instance' AS instance,
       coalesce(l.payload->>'account', '') AS account,
       coalesce(l.payload->>'role', '') AS role,
       coalesce(i.owner, '') AS owner,
       coalesce(l.payload->>'source', '') AS source_node,
       coalesce(l.payload->>'target', '') AS target_node,
       coalesce((l.payload->>'automatic')::boolean, false) AS automatic,
       l.payload->>'state' AS state,
       coalesce(l.payload->>'phase', '') AS phase,
       coalesce((l.payload->>'syncs')::int, 0) AS syncs,
       coalesce((l.payload->>'last_sync_bytes')::bigint, 0) AS last_sync_bytes,
       (l.payload->>'scheduled_at')::timestamptz AS scheduled_at,
       coalesce(l.payload->>'prior_run_state', '') AS prior_run_state,
       coalesce((l.payload->>'switched')::boolean, false) AS switched,
       coalesce((l.payload->>'finalized')::boolean, false) AS finalized,
       coalesce(l.payload->>'message', '') AS message,
       coalesce(l.payload->>'error', '') AS error,
       coalesce(l.payload->>'error_detail', '') AS error_detail,
       a.created_at, a.started_at,
       CASE WHEN l.payload->>'state' IN ('aborted', 'failed', 'successful') THEN l.time END AS finished_at,
       l.time AS updated_at,
       coalesce((p.payload->>'current')::bigint, 0) AS current_bytes,
       coalesce((p.payload->>'total')::bigint, 0) AS total_bytes,
       coalesce((p.payload->>'eta_seconds')::double precision, 0) AS eta_seconds,
       coalesce((p.payload->>'bytes_per_second')::bigint, 0) AS bytes_per_second
FROM agg a
JOIN {schema}.event_log l ON l.seq = a.last_seq
LEFT JOIN {schema}.instances i ON i.name = l.payload->>'instance'
LEFT JOIN LATERAL (
  SELECT payload FROM {schema}.event_log
  WHERE instance = l.payload->>'instance' AND type = 'move.progress'
    AND payload->>'request' = a.id
  ORDER BY seq DESC
  LIMIT 1
) p ON true
WHERE ($3::text = '' OR l.payload->>'state' = $3)
  AND ($4::text = '' OR i.owner = $4)
  AND ($5::text = '' OR l.payload->>'source' = $5 OR l.payload->>'target' = $5)
  AND a.id > $6
ORDER BY a.id
LIMIT $7
