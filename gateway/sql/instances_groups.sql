-- The instances among $1 and the group of each: its own column when the
-- projector has it, else its primary's group.
SELECT i.name, coalesce(nullif(i.group_name, ''), n.group_name, '') AS group_name
FROM {schema}.instances i
LEFT JOIN {schema}.nodes n ON n.name = i.primary_node
WHERE i.name = ANY($1::text[])
ORDER BY i.name
