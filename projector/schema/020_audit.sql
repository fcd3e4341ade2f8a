-- The audit trail (GET /v1/audit): the asks people made and the gateway's
-- refusals, in log order. event_log holds them all; this partial index
-- finds them without scanning the rest (moves' progress, opcodes, plans).
-- Its list of types is the one gateway/sql/audit_list.sql filters on: the
-- same literal list lets Postgres prove the query may use it.
CREATE INDEX event_log_audit ON event_log (seq)
    WHERE type IN ('evacuation.requested', 'group_change.requested', 'request.approved',
                   'request.cancelled', 'migration.action_requested', 'settings.changed',
                   'node.action_requested', 'audit.recorded');
