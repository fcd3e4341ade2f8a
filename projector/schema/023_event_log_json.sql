-- event_log.payload as json, not jsonb (issue 12: the projector at 50,000
-- events/s). jsonb parses every payload into its binary tree on the way
-- in, about 1.3 µs of the backend's time per event here, which was 15 % of
-- writing the log; json only checks the text. Nothing needs jsonb's form:
-- the readers extract fields (->>, which json has), and the payload is
-- already canonical when it arrives, compacted by events.Decode, so a
-- replay writes the very same text. Replay's table hashes go through
-- to_jsonb either way. On a large log this rewrites the table once.
ALTER TABLE event_log ALTER COLUMN payload TYPE json USING payload::json;

-- What jsonb refused on the way in and json keeps: a NUL character
-- (\u0000), which no text value can hold, so every ->> and to_jsonb that
-- met it would fail, long after the fold. Refused here instead, the event
-- is set aside in undecodable_events as before (isDataError). strpos
-- finds the rare candidate cheaply; the pattern then makes sure the
-- backslash is not itself escaped (\\u0000 is a backslash and "u0000").
ALTER TABLE event_log ADD CONSTRAINT event_log_payload_no_nul
    CHECK (strpos(payload::text, '\u0000') = 0
           OR payload::text !~ '(^|[^\\])(\\\\)*\\u0000');
