-- The sync phases of the recent moves of the instances named in $1, for
-- their dirty rates: per instance, move (request) and phase (index), the
-- most bytes any of its progress events reported and when it started
-- (its events' start, else their earliest time; seconds since the
-- epoch); at most $2 phases per instance, the newest. One read for every
-- instance of a plan.
SELECT instance, request, idx, first_seq, bytes, started
FROM (SELECT instance,
             payload->>'request' AS request,
             (payload->>'index')::int AS idx,
             min(seq) AS first_seq,
             max(greatest((payload->>'total')::bigint, (payload->>'current')::bigint)) AS bytes,
             extract(epoch FROM min(coalesce((payload->>'started')::timestamptz, time)))::double precision AS started,
             row_number() OVER (PARTITION BY instance ORDER BY min(seq) DESC) AS n
      FROM {schema}.event_log
      WHERE instance = ANY($1::text[]) AND type = 'move.progress' AND payload->>'phase' = 'sync'
      GROUP BY 1, 2, 3) phases
WHERE n <= $2
ORDER BY instance, first_seq DESC
