-- A leaner event_log (issue 12: the projector at 50,000 events/s). Every
-- index of event_log costs each event's row about a microsecond of
-- Postgres's time, and most of a fold's time is writing the log, so an
-- index no reader uses goes, and one that serves a few types holds only
-- those:
--   * UNIQUE (topic, partition, offset): no query looks a row up by its
--     place, and a place is folded once anyway, its offset committed with
--     its row (the primary key on id is what refuses a duplicate event);
--   * event_log_topic_key served only the search for the state event
--     before a node's or a migration's (gateway/sql/history_subject.sql,
--     which names these types), yet held every row, progress samples
--     included;
--   * event_log_correlation duplicated event_log_request: request_id is the
--     reason trail's request id, or the correlation id when there is none,
--     and events.Decode refuses an event whose request id is not its
--     correlation id, so the two columns are equal in every row
--     (gateway/sql/history_request.sql reads request_id alone).
ALTER TABLE event_log DROP CONSTRAINT event_log_topic_partition_offset_key;
DROP INDEX event_log_topic_key;
DROP INDEX event_log_correlation;
CREATE INDEX event_log_state_key ON event_log (topic, key, seq)
    WHERE type IN ('node.announced', 'node.updated', 'migration.state_changed');
