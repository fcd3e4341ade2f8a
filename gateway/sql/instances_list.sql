-- Instances by name after the cursor $4, optionally on one node (as
-- primary or secondary), in one group and of one owner. An instance's group
-- is its own column when the projector has it, else its primary's group.
SELECT * FROM (
  SELECT i.name, i.owner, i.memory_mib, i.vcpus, i.disk_mib, i.storage,
         i.run_state, coalesce(nullif(i.group_name, ''), n.group_name, '') AS group_name,
         i.primary_node, i.secondary_node, i.tags, i.user_migration, i.max_downtime_ms,
         i.last_request, i.updated_at
  FROM {schema}.instances i
  LEFT JOIN {schema}.nodes n ON n.name = i.primary_node
  WHERE ($1::text = '' OR i.primary_node = $1 OR i.secondary_node = $1)
    AND ($3::text = '' OR i.owner = $3)
    AND ($5::text = '' OR i.name = $5)
    AND i.name > $4
) x
WHERE ($2::text = '' OR group_name = $2)
ORDER BY name
LIMIT $6
