-- Each node's last heartbeat, kept apart from its inventory row (issue
-- 18). Heartbeats moved to drove.heartbeats, a topic of their own, so a
-- node's beats and its NodeAnnounced are no longer in one partition: a
-- fold (a replay above all, where the compacted heartbeats topic is read
-- in the first fetch) may meet a beat before the node's row exists. The
-- beat lands here whatever the order, and nodes.heartbeat_at (015) takes
-- it when the node's row is made or the beat comes.
CREATE TABLE node_heartbeats (
    name         text        PRIMARY KEY,
    heartbeat_at timestamptz NOT NULL
);
