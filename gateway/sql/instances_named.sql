-- The instances named in $1, as instances_list shows each (the moves of
-- a dry run's plan, predicted together).
SELECT i.name, i.owner, i.memory_mib, i.vcpus, i.disk_mib, i.storage,
       i.run_state, coalesce(nullif(i.group_name, ''), n.group_name, '') AS group_name,
       i.primary_node, i.secondary_node, i.tags, i.user_migration, i.max_downtime_ms,
       i.last_request, i.updated_at
FROM {schema}.instances i
LEFT JOIN {schema}.nodes n ON n.name = i.primary_node
WHERE i.name = ANY($1::text[])
