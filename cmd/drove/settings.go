package main

import (
	"context"

	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/drovehq/drove/events"
)

const settingsUsage = `
Usage: drove settings [flags]
       drove settings --instance NAME --user-migration true|false|default

Reads (no flags) or changes the operators' migration settings; a change
prints the whole settings now in force. Operators only. Changes apply to
running migrations within seconds.

  --allow-user-migrations true|false   owners may migrate their own instances
  --max-running-migrations-per-node N  more wait, queued, in creation order
  --send-mbps-limit X                  cap each migration's send rate (0: none)
  --resync-max-mb N                    switch once a re-sync sends less than N MiB
  --resync-max-syncs N                 ... or after N syncs
  --resync-shrink-window N             ... or when the size stopped shrinking
                                       over the last N syncs
  --progress-timeout SECONDS           no progress for that long: stalled
  --finalize-grace SECONDS             finalize switched migrations after that
                                       long (0: wait for an explicit finalize)
  --max-downtime MS                    the downtime budget of every migration
                                       that asks for none (0: no budget)
  --instance NAME --user-migration V   override allow-user-migrations for one
                                       instance: true, false, or default
                                       (follow the global setting)`

func runSettings(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("settings", settingsUsage, stderr)
	var cf clientFlags
	cf.register(fs)
	changes := map[string]any{}
	setter := func(name, key string, parse func(string) (any, error)) {
		fs.Func(name, "see above", func(v string) error {
			x, err := parse(v)
			if err != nil {
				return err
			}
			changes[key] = x
			return nil
		})
	}
	asBool := func(v string) (any, error) { return strconv.ParseBool(v) }
	asInt := func(v string) (any, error) { return strconv.Atoi(v) }
	asFloat := func(v string) (any, error) { return strconv.ParseFloat(v, 64) }
	setter("allow-user-migrations", "allow_user_migrations", asBool)
	setter("max-running-migrations-per-node", "max_running_migrations_per_node", asInt)
	setter("send-mbps-limit", "send_mbps_limit", asFloat)
	setter("resync-max-mb", "resync_max_bytes", func(v string) (any, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		return n << 20, err
	})
	setter("resync-max-syncs", "resync_max_syncs", asInt)
	setter("resync-shrink-window", "resync_shrink_window", asInt)
	setter("progress-timeout", "progress_timeout_seconds", asInt)
	setter("finalize-grace", "finalize_grace_seconds", asInt)
	setter("max-downtime", "max_downtime_ms", func(v string) (any, error) { return strconv.ParseInt(v, 10, 64) })
	instance := fs.String("instance", "", "the instance whose --user-migration to set")
	userMig := fs.String("user-migration", "", "true, false or default (with --instance)")
	if _, err := parse(fs, args); err != nil {
		return flagExit(err)
	}
	ctx := context.Background()
	api := cf.client()
	if *instance != "" || *userMig != "" {
		if *instance == "" || *userMig == "" || len(changes) > 0 {
			fmt.Fprintln(stderr, "drove settings: --instance and --user-migration go together, without other settings")
			return exitUsage
		}
		var allowed *bool
		if *userMig != "default" {
			b, err := strconv.ParseBool(*userMig)
			if err != nil {
				fmt.Fprintln(stderr, "drove settings: --user-migration: want true, false or default")
				return exitUsage
			}
			allowed = &b
		}
		if err := api.SetUserMigration(ctx, *instance, allowed); err != nil {
			return fail(stderr, "settings", err)
		}
		fmt.Fprintf(stdout, "User migrations of %s: %s.\n", *instance, *userMig)
		return exitOK
	}
	var s *events.SettingsChanged
	var err error
	if len(changes) == 0 {
		s, err = api.Settings(ctx)
	} else {
		s, err = api.UpdateSettings(ctx, changes)
	}
	if err != nil {
		return fail(stderr, "settings", err)
	}
	if cf.json {
		return printJSON(stdout, s)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, r := range [][2]string{
		{"allow_user_migrations", strconv.FormatBool(s.AllowUserMigrations)},
		{"max_running_migrations_per_node", strconv.Itoa(s.MaxRunningMigrationsPerNode)},
		{"send_mbps_limit", strconv.FormatFloat(s.SendMbpsLimit, 'g', -1, 64) + " (0: no cap)"},
		{"resync_max_bytes", fmt.Sprintf("%d (%s)", s.ResyncMaxBytes, events.FormatBytes(s.ResyncMaxBytes))},
		{"resync_max_syncs", strconv.Itoa(s.ResyncMaxSyncs)},
		{"resync_shrink_window", strconv.Itoa(s.ResyncShrinkWindow)},
		{"progress_timeout_seconds", strconv.Itoa(s.ProgressTimeoutSeconds)},
		{"finalize_grace_seconds", strconv.Itoa(s.FinalizeGraceSeconds)},
		{"max_downtime_ms", strconv.FormatInt(s.MaxDowntimeMS, 10) + " (0: no budget)"},
	} {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	tw.Flush()
	return exitOK
}
