-- The audit trail (schema 020: event_log_audit): the asks people made
-- (evacuations, group changes, approvals, cancels, migrate actions,
-- settings, node actions) and the gateway's refusals and other audited
-- decisions (audit.recorded), in log order (seq), a page at a time: after
-- seq $1, at most $2. $3 keeps one outcome ('' all; an ask's is
-- 'requested', an audit record's its own); $4 one actor ('' all): the
-- reason trail's, or the refused caller's name of an audit record. The
-- list of types is the index's: keep them equal.
SELECT e.seq, e.id, e.time, e.type, e.actor, e.why, e.request_id, e.payload
FROM {schema}.event_log e
WHERE e.type IN ('evacuation.requested', 'group_change.requested', 'request.approved',
                 'request.cancelled', 'migration.action_requested', 'settings.changed',
                 'node.action_requested', 'audit.recorded')
  AND e.seq > $1
  AND ($3::text = '' OR $3::text = CASE WHEN e.type = 'audit.recorded'
                                        THEN coalesce(e.payload->>'outcome', '') ELSE 'requested' END)
  AND ($4::text = '' OR e.actor = $4::text
       OR (e.type = 'audit.recorded' AND split_part(e.payload->>'subject', ' (', 1) = $4::text))
ORDER BY e.seq
LIMIT $2
