-- The sync phases of the recent moves of the instances named in $1, for
-- their dirty rates: per instance, move (request) and phase (index), the
-- most bytes and the longest duration any of its progress events
-- reported; at most $2 phases per instance, the newest. One read for
-- every instance of a plan.
SELECT instance, request, idx, first_seq, bytes, seconds
FROM (SELECT instance,
             payload->>'request' AS request,
             (payload->>'index')::int AS idx,
             min(seq) AS first_seq,
             max(greatest((payload->>'total')::bigint, (payload->>'current')::bigint)) AS bytes,
             max(coalesce((payload->>'duration_seconds')::double precision, 0)) AS seconds,
             row_number() OVER (PARTITION BY instance ORDER BY min(seq) DESC) AS n
      FROM {schema}.event_log
      WHERE instance = ANY($1::text[]) AND type = 'move.progress' AND payload->>'phase' = 'sync'
      GROUP BY 1, 2, 3) phases
WHERE n <= $2
ORDER BY instance, first_seq DESC
