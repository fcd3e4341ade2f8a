-- Which of the instances $1 an active request holds, and which request.
-- A request is active until it is finished or rejected. Once planned it
-- holds the instances of its jobs that have not ended (nor been cancelled
-- before they ran). Before its plan it holds what it names: a group change
-- its instances, an evacuation the instances on its nodes in its mode's
-- role; a request cancelled before it was planned holds nothing.
WITH active AS (
  SELECT id, kind, nodes, mode, instances, planned_at, cancelled_at
  FROM {schema}.request_status
  WHERE status NOT IN ('finished', 'rejected')
)
SELECT j.instance, a.id AS request
FROM active a
JOIN {schema}.jobs j ON j.request = a.id
WHERE a.planned_at IS NOT NULL
  AND j.instance = ANY($1::text[])
  AND j.ended_at IS NULL AND j.cancelled_at IS NULL
UNION
SELECT x.instance, a.id
FROM active a, unnest(a.instances) AS x(instance)
WHERE a.planned_at IS NULL AND a.cancelled_at IS NULL
  AND a.kind = 'group-change'
  AND x.instance = ANY($1::text[])
UNION
SELECT i.name, a.id
FROM active a
JOIN {schema}.instances i
  ON (a.mode IN ('primary-only', 'all') AND i.primary_node = ANY(a.nodes))
  OR (a.mode IN ('secondary-only', 'all') AND i.secondary_node = ANY(a.nodes))
WHERE a.planned_at IS NULL AND a.cancelled_at IS NULL
  AND a.kind = 'evacuation'
  AND i.name = ANY($1::text[])
ORDER BY 1, 2
