-- History (schema/010_history.sql).

-- name: history_subjects_insert
-- Event $1 touched the subjects ($2 kinds, $3 names), in parallel arrays.
INSERT INTO history_subjects (kind, subject, event_id)
SELECT k, s, $1 FROM unnest($2::text[], $3::text[]) AS u(k, s)
ON CONFLICT DO NOTHING
