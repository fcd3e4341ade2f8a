-- An instance's own downtime budget (issue 30): InstanceDeclared's
-- max_downtime_ms, which holds the instance's migrations that ask for no
-- budget of their own, over the settings' (settings.max_downtime_ms).
-- 0 follows the settings'.
ALTER TABLE instances
    ADD COLUMN max_downtime_ms bigint NOT NULL DEFAULT 0;
