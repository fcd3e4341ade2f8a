-- The node lifecycle's statements (schema/015_node_actions.sql).

-- name: node_action_requested
INSERT INTO node_actions (request, node, action, actor, why, requested_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (request) DO NOTHING

-- name: node_action_ended
UPDATE node_actions SET state = $2, reason = $3, ended_at = $4
WHERE request = $1

-- name: node_heartbeat
UPDATE nodes SET heartbeat_at = GREATEST(heartbeat_at, $2) WHERE name = $1

-- name: checksum_node_actions
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.request), ''))
FROM node_actions t
