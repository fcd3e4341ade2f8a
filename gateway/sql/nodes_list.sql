-- Nodes by name after the cursor $3, optionally of one group and one
-- drained flag ($2: '' for either, else 'true' or 'false'), with how many
-- instances each holds as primary and as secondary.
SELECT n.name, n.group_name, n.total_memory_mib, n.total_disk_mib, n.total_cpus,
       n.total_spindles, n.free_memory_mib, n.free_disk_mib, n.offline,
       n.drained, n.vm_capable, n.tags, n.updated_at, n.heartbeat_at,
       (SELECT count(*) FROM {schema}.instances i WHERE i.primary_node = n.name) AS primary_instances,
       (SELECT count(*) FROM {schema}.instances i WHERE i.secondary_node = n.name) AS secondary_instances
FROM {schema}.nodes n
WHERE ($1::text = '' OR n.group_name = $1)
  AND ($2::text = '' OR n.drained = $2::boolean)
  AND ($4::text = '' OR n.name = $4)
  AND n.name > $3
ORDER BY n.name
LIMIT $5
