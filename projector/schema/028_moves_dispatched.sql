-- The moves of bulk requests are the moves rows a dispatch has dated
-- (created_at, written by opcode.dispatched only): move_state reads them
-- through this index, a page at a time, instead of testing every row of
-- the table (most are per-instance migrations' phases) against
-- migration_phases and the migrations' own rows. Listing 50 moves of a
-- log of 29,000 phase rows read all of them, 115-215 ms a page.
CREATE INDEX moves_dispatched ON moves (id) WHERE kind = 'opcode' AND created_at IS NOT NULL;
