-- The settings in force: the latest SettingsChanged (the settings topic
-- has one key, so its events are in log order), with its seq.
SELECT seq, payload
FROM {schema}.event_log
WHERE type = 'settings.changed'
ORDER BY seq DESC
LIMIT 1
