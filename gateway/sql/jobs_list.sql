-- Jobs by (request, idx) after the cursor ($3, $4), optionally of one
-- request and one state. A job's state uses Ganeti's words: waiting (not
-- released), running (released), then how it ended; a job cancelled before
-- it ran is canceled too, with its cancel_reason.
SELECT * FROM (
  SELECT request, idx, instance, opcodes, depends, released_at, cancelled_at,
         cancel_reason, ended_at, error,
         CASE
           WHEN ended_at IS NOT NULL THEN status
           WHEN cancelled_at IS NOT NULL THEN 'canceled'
           WHEN released_at IS NOT NULL THEN 'running'
           ELSE 'waiting'
         END AS state
  FROM {schema}.jobs
  WHERE ($1::text = '' OR request = $1)
    AND (request, idx) > ($3::text, $4::int)
) j
WHERE ($2::text = '' OR state = $2)
ORDER BY request, idx
LIMIT $5
