-- Every node's latest announcement or restatement (its link bandwidths
-- are in the payload), for a request's makespan estimate.
SELECT DISTINCT ON (payload->>'name') payload
FROM {schema}.event_log
WHERE type IN ('node.announced', 'node.updated')
ORDER BY payload->>'name', seq DESC
