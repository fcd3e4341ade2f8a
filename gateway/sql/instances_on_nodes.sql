-- The instances an evacuation of nodes $1 would move: those with their
-- primary there when $2, those with their secondary there when $3.
SELECT name
FROM {schema}.instances
WHERE ($2::boolean AND primary_node = ANY($1::text[]))
   OR ($3::boolean AND secondary_node = ANY($1::text[]))
ORDER BY name
