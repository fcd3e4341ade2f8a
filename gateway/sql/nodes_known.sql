-- Which of the names $1 are nodes.
SELECT name FROM {schema}.nodes WHERE name = ANY($1::text[]) ORDER BY name
