-- Replay compares each view table of the live schema with its rebuild by
-- row count and the md5 of every row's JSON, in primary key order. Columns
-- that depend on the projection run rather than the log are left out:
-- event_log.seq numbers rows in the order one projector happened to read
-- partitions. projector_offsets is compared separately (it is where each
-- fold stopped, not what the log says).

-- name: checksum_event_log
SELECT count(*), md5(coalesce(string_agg((to_jsonb(t) - 'seq')::text, E'\n' ORDER BY t.id), ''))
FROM event_log t

-- name: checksum_groups
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.name), ''))
FROM groups t

-- name: checksum_nodes
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.name), ''))
FROM nodes t

-- name: checksum_instances
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.name), ''))
FROM instances t

-- name: checksum_requests
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.id), ''))
FROM requests t

-- name: checksum_plans
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.request), ''))
FROM plans t

-- name: checksum_jobs
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.request, t.idx), ''))
FROM jobs t

-- name: checksum_opcodes
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.request, t.job, t.idx), ''))
FROM opcodes t

-- name: checksum_moves
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.id), ''))
FROM moves t

-- name: checksum_move_syncs
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.move, t.started), ''))
FROM move_syncs t

-- name: checksum_move_status
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.request, t.instance, t.node), ''))
FROM move_status t

-- name: checksum_undecodable_events
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.topic, t.partition, t."offset"), ''))
FROM undecodable_events t

-- name: checksum_history_subjects
SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY t.kind, t.subject, t.event_id), ''))
FROM history_subjects t
