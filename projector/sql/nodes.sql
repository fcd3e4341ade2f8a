-- The node lifecycle's statements (schema/015_node_actions.sql).

-- name: node_action_requested
INSERT INTO node_actions (request, node, action, actor, why, requested_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (request) DO NOTHING

-- name: node_action_ended
UPDATE node_actions SET state = $2, reason = $3, ended_at = $4
WHERE request = $1

-- name: node_heartbeat
-- Kept in node_heartbeats whether or not the node's row exists yet (the
-- beats' topic is not ordered with drove.inventory); node_stated takes it
-- from there.
WITH beat AS (
    INSERT INTO node_heartbeats (name, heartbeat_at) VALUES ($1, $2)
    ON CONFLICT (name) DO UPDATE SET heartbeat_at = GREATEST(node_heartbeats.heartbeat_at, EXCLUDED.heartbeat_at)
    RETURNING heartbeat_at
)
UPDATE nodes SET heartbeat_at = (SELECT heartbeat_at FROM beat) WHERE name = $1

-- name: checksum_node_heartbeats
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.name), ''))
FROM node_heartbeats t

-- name: checksum_node_actions
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.request), ''))
FROM node_actions t
