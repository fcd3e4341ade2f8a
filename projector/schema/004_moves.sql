-- One word per idea. "Migration" means only RFD 34's per-instance
-- migration (instance_migrations, migration_phases); the progress record of
-- every move an executor runs — an opcode of a bulk request, or a whole
-- per-instance migration (kind 'instance') — is a move. The tables and
-- their indexes are renamed, not rebuilt: rows stay. The views over them
-- (views.sql) are made again after the numbered files, over the new names.
ALTER TABLE migrations RENAME TO moves;
ALTER INDEX migrations_pkey RENAME TO moves_pkey;
ALTER INDEX migrations_instance RENAME TO moves_instance;
ALTER INDEX migrations_request RENAME TO moves_request;

-- The sync phases of each move (see 002).
ALTER TABLE migration_syncs RENAME TO move_syncs;
ALTER TABLE move_syncs RENAME COLUMN migration TO move;
ALTER INDEX migration_syncs_pkey RENAME TO move_syncs_pkey;
