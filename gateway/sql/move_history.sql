-- The progress history of one move: the progress and end events of
-- instance $1 from the opcode ($2 request, $3 job, $4 index) that is the
-- move, by seq.
SELECT seq, time, type, payload
FROM {schema}.event_log
WHERE instance = $1
  AND type IN ('move.progress', 'move.end')
  AND payload->>'request' = $2
  AND (payload->>'job')::int = $3
  AND (payload->>'index')::int = $4
ORDER BY seq
