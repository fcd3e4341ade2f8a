-- A node's lifecycle (planner/nodes): the operators' node commands
-- (undrain, offline, online) and their answers, both on drove.requests
-- keyed by node, so in log order; and each node's last heartbeat
-- (drove.inventory, keyed by node like the node's own rows). The rules of
-- 001 hold: upserts keyed by the events' own keys, times from the events.
CREATE TABLE node_actions (
    request      text        PRIMARY KEY,
    node         text        NOT NULL,
    action       text        NOT NULL,  -- undrain | offline | online
    actor        text        NOT NULL DEFAULT '',
    why          text        NOT NULL DEFAULT '',
    requested_at timestamptz NOT NULL,
    state        text        NOT NULL DEFAULT 'requested', -- requested | done | refused
    reason       text        NOT NULL DEFAULT '',          -- the planner's answer
    ended_at     timestamptz
);
CREATE INDEX node_actions_node ON node_actions (node, requested_at);

-- When the node's executor last renewed its lease (NodeHeartbeat.sent is
-- the executor's clock; this is the event's time).
ALTER TABLE nodes ADD COLUMN heartbeat_at timestamptz;
