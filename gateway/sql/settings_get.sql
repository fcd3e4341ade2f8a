-- The settings in force (the latest SettingsChanged), with the time of
-- that event.
SELECT allow_user_migrations, max_running_migrations_per_node, send_mbps_limit,
       resync_max_bytes, resync_max_syncs, resync_shrink_window,
       progress_timeout_seconds, finalize_grace_seconds, max_downtime_ms, updated_at
FROM {schema}.settings
WHERE key = 'settings'
