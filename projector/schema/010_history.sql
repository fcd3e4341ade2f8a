-- History (issue 15): which events touched each instance, node, request
-- and per-instance migration, so an auditor reads one subject's story
-- without scanning the log. One row per (subject, event), written by the
-- projector with the event's own effects (projector/history.go says which
-- subjects an event touches); the event itself is its event_log row.
-- Upserts keyed by the row itself: applying an event twice, or in another
-- partition order, writes the same rows, so replay compares the table.
CREATE TABLE history_subjects (
    kind     text NOT NULL, -- instance | node | request | migration
    subject  text NOT NULL, -- the instance's or node's name, the request's or migration's id
    event_id text NOT NULL, -- event_log.id
    PRIMARY KEY (kind, subject, event_id)
);

-- What changed is read against the state event before it (a node's
-- previous NodeUpdated, a migration's previous record): the state events
-- of one object share a topic and a partition key, so that is the index.
CREATE INDEX event_log_topic_key ON event_log (topic, key, seq);
