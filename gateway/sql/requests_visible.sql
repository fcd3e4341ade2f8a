-- Which of the requests $1 the views show (their requested event is in).
SELECT id FROM {schema}.requests WHERE id = ANY($1::text[]) AND kind <> '' ORDER BY id
