-- The events that touched a subject (schema 010: history_subjects), in log
-- order (seq), a page at a time: $1 the kinds it is recorded under, $2 its
-- name or id, after seq $3, at most $4. Each row carries the state event
-- before it of the same object (previous: a node's last statement, a
-- migration's last record), for what changed, and the first ask of the
-- request or migration it belongs to (who asked, and why).
SELECT e.seq, e.id, e.time, e.type, e.topic, e.partition, e."offset", e.producer,
       e.actor, e.why, e.request_id, e.instance, e.payload,
       prev.payload AS previous,
       coalesce(ask.type, '') AS ask_type,
       coalesce(ask.actor, '') AS requester,
       coalesce(ask.why, '') AS requester_why
FROM {schema}.event_log e
LEFT JOIN LATERAL (
  SELECT p.payload FROM {schema}.event_log p
  WHERE p.topic = e.topic AND p.key = e.key AND p.seq < e.seq
    -- the types of the partial index event_log_state_key (schema 021)
    AND p.type IN ('node.announced', 'node.updated', 'migration.state_changed')
    AND ((e.type <> 'migration.state_changed' AND p.type IN ('node.announced', 'node.updated'))
      OR (e.type = 'migration.state_changed' AND p.type = e.type
          AND p.payload->>'migration' = e.payload->>'migration'))
  ORDER BY p.seq DESC
  LIMIT 1
) prev ON e.type IN ('node.announced', 'node.updated', 'migration.state_changed')
LEFT JOIN LATERAL (
  SELECT a.type, a.actor, a.why FROM {schema}.event_log a
  WHERE a.request_id = e.request_id
    AND a.type IN ('evacuation.requested', 'group_change.requested', 'migration.action_requested')
  ORDER BY a.seq
  LIMIT 1
) ask ON e.request_id <> ''
WHERE e.id IN (SELECT h.event_id FROM {schema}.history_subjects h
               WHERE h.kind = ANY($1::text[]) AND h.subject = $2)
  AND e.seq > $3
ORDER BY e.seq
LIMIT $4
