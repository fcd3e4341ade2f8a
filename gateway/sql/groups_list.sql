-- Groups by name after the cursor $1, with their node count.
SELECT g.name, g.alloc_policy, g.tags, g.updated_at,
       (SELECT count(*) FROM {schema}.nodes n WHERE n.group_name = g.name) AS nodes
FROM {schema}.groups g
WHERE g.name > $1
ORDER BY g.name
LIMIT $2
