-- The latest InstanceDeclared of instance $1: the whole declared state
-- (disk sizes, NICs, spindles) that the instances view sums up or leaves
-- out, which a restatement must carry.
SELECT payload
FROM {schema}.event_log
WHERE instance = $1 AND type = 'instance.declared'
ORDER BY seq DESC
LIMIT 1
