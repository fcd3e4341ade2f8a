-- The active evacuations that empty node $1, oldest first: while one is
-- active the node cannot be undrained.
SELECT id FROM {schema}.request_status
WHERE kind = 'evacuation' AND status NOT IN ('finished', 'rejected')
  AND $1::text = ANY(nodes)
ORDER BY requested_at, id
