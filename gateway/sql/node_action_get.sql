-- One node command (undrain, offline, online) and its answer.
SELECT request, node, action, actor, why, requested_at, state, reason, ended_at
FROM {schema}.node_actions
WHERE request = $1
