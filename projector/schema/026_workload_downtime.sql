-- A move's downtime as Drove measured it and as the instance's own
-- workload saw it (issue 30): the gap in the timeline the workload writes
-- with its data, from its last write on the source to its first on the
-- target, read on the target after the move. The migration record's
-- latest switch (MigrationStateChanged.downtime_ms and
-- workload_downtime_ms) and each phase's end (MigrationPhaseEnded); 0
-- before a switch or without a figure.
ALTER TABLE moves
    ADD COLUMN downtime_ms          bigint NOT NULL DEFAULT 0,
    ADD COLUMN workload_downtime_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE migration_phases
    ADD COLUMN workload_downtime_ms bigint NOT NULL DEFAULT 0;
