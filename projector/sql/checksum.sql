-- Replay compares each view table of the live schema with its rebuild by
-- row count and a hash of its rows: each row's JSON is hashed (md5, 128
-- bits), and the table's hash is the md5 of the sums of the rows' hashes'
-- two 64-bit halves (as signed numbers, summed exactly as numeric). A sum
-- needs no order and holds one number however large the table, so the
-- rows stream through the aggregate instead of being concatenated into
-- one value (which Postgres caps at 1 GB). A changed, missing or extra row
-- changes its table's sums unless 128 bits of md5 collide. Columns that
-- depend on the projection run rather than the log are left out:
-- event_log.seq numbers rows in the order one projector happened to read
-- partitions. projector_offsets is compared separately (it is where each
-- fold stopped, not what the log says).

-- name: checksum_event_log
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5((to_jsonb(t) - 'seq')::text) AS h FROM event_log t) AS r

-- name: checksum_groups
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5(to_jsonb(t)::text) AS h FROM groups t) AS r

-- name: checksum_nodes
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5(to_jsonb(t)::text) AS h FROM nodes t) AS r

-- name: checksum_instances
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5(to_jsonb(t)::text) AS h FROM instances t) AS r

-- name: checksum_requests
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5(to_jsonb(t)::text) AS h FROM requests t) AS r

-- name: checksum_plans
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5(to_jsonb(t)::text) AS h FROM plans t) AS r

-- name: checksum_jobs
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5(to_jsonb(t)::text) AS h FROM jobs t) AS r

-- name: checksum_opcodes
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5(to_jsonb(t)::text) AS h FROM opcodes t) AS r

-- name: checksum_moves
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5(to_jsonb(t)::text) AS h FROM moves t) AS r

-- name: checksum_move_syncs
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5(to_jsonb(t)::text) AS h FROM move_syncs t) AS r

-- name: checksum_move_status
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5(to_jsonb(t)::text) AS h FROM move_status t) AS r

-- name: checksum_undecodable_events
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5(to_jsonb(t)::text) AS h FROM undecodable_events t) AS r

-- name: checksum_history_subjects
SELECT count(*), md5(coalesce(sum(('x' || left(h, 16))::bit(64)::bigint), 0) || ':' ||
                   coalesce(sum(('x' || right(h, 16))::bit(64)::bigint), 0))
FROM (SELECT md5(to_jsonb(t)::text) AS h FROM history_subjects t) AS r
