-- The downtime budget and its predictions (issue 30): the downtime the
-- coordinator predicted for a migration's switch and the budget in force
-- (MigrationStateChanged's predicted_downtime_ms and max_downtime_ms), a
-- switch's overhead, the part of its downtime that moved no data
-- (MigrationPhaseEnded.overhead_ms, read by later predictions), and the
-- global budget (SettingsChanged.max_downtime_ms). 0 is none.
ALTER TABLE moves
    ADD COLUMN predicted_downtime_ms bigint NOT NULL DEFAULT 0,
    ADD COLUMN max_downtime_ms       bigint NOT NULL DEFAULT 0;
ALTER TABLE migration_phases
    ADD COLUMN overhead_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE settings
    ADD COLUMN max_downtime_ms bigint NOT NULL DEFAULT 0;
