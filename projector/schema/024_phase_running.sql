-- Whether a per-instance migration's latest phase is still under way, as
-- its record says (MigrationStateChanged.phase_running). The gateway
-- refuses a next step on it at once; the phases themselves are folded
-- from another topic (drove.opcodes), so a view joined to them could show
-- a phase running after the record that answers its end, and refuse a
-- step the coordinator would accept.
ALTER TABLE moves ADD COLUMN phase_running boolean NOT NULL DEFAULT false;
