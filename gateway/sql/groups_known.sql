-- Which of the names $1 are groups.
SELECT name FROM {schema}.groups WHERE name = ANY($1::text[]) ORDER BY name
