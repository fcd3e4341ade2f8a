-- Whether instance $1 is known to the views or the log.
SELECT EXISTS (SELECT 1 FROM {schema}.instances WHERE name = $1)
    OR EXISTS (SELECT 1 FROM {schema}.event_log WHERE instance = $1)
