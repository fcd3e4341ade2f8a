-- The latest plan of a request.
SELECT request, moved, failed, jobs, score_before, score_after, computed_at
FROM {schema}.plans
WHERE request = $1
