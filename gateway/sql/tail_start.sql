-- Where the tailer starts: the highest seq committed now.
SELECT coalesce(max(seq), 0) FROM {schema}.event_log
