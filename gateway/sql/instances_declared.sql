-- The latest InstanceDeclared of each instance named in $1, for a
-- request's makespan estimate (sizes and storage kinds).
SELECT DISTINCT ON (instance) payload
FROM {schema}.event_log
WHERE instance = ANY($1::text[]) AND type = 'instance.declared'
ORDER BY instance, seq DESC
