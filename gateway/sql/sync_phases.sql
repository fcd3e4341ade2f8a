-- The sync phases of instance $1's recent moves, for the dirty rate: per
-- move (request) and phase (index), the most bytes and the longest
-- duration any of its progress events reported.
SELECT payload->>'request' AS request,
       (payload->>'index')::int AS idx,
       min(seq) AS first_seq,
       max(greatest((payload->>'total')::bigint, (payload->>'current')::bigint)) AS bytes,
       max(coalesce((payload->>'duration_seconds')::double precision, 0)) AS seconds
FROM {schema}.event_log
WHERE instance = $1 AND type = 'move.progress' AND payload->>'phase' = 'sync'
GROUP BY 1, 2
ORDER BY first_seq DESC
LIMIT 200
