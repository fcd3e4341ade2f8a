package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/client"
)

const settingsUsage = `
Usage: drove settings [flags]
       drove settings --instance NAME [--user-migration true|false|default]
                      [--max-downtime MS] [--reason WHY]

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

With --instance, the settings of one instance, over the global ones:
reads them (no other flag) or changes them.

  --user-migration V                   override allow-user-migrations for the
                                       instance: true, false, or default
                                       (follow the global setting); operators
  --max-downtime MS                    the instance's own downtime budget: a
                                       migration of it that asks for none
                                       (drove migrate --max-downtime) does not
                                       switch while its predicted downtime is
                                       over MS; 0 follows the global budget.
                                       Its owner may set it too
  --reason WHY                         why, recorded with the change

A migration's budget is the one it asks for, else its instance's, else
the global one.`

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
	instance := fs.String("instance", "", "the instance whose own settings to read or change")
	userMig := fs.String("user-migration", "", "true, false or default (with --instance)")
	reason := fs.String("reason", "", "why, recorded with an instance's change (with --instance)")
	if _, err := parse(fs, args); err != nil {
		return flagExit(err)
	}
	ctx := context.Background()
	api := cf.client()
	if *instance != "" || *userMig != "" || *reason != "" {
		return instanceSettings(ctx, api, cf, *instance, *userMig, *reason, changes, stdout, stderr)
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

// instanceSettings reads or changes one instance's own settings: the
// user-migration override and its downtime budget (in changes, as
// max_downtime_ms, the only global setting with an instance's override).
func instanceSettings(ctx context.Context, api *client.Client, cf clientFlags, instance, userMig, reason string,
	changes map[string]any, stdout, stderr io.Writer) int {
	budget, setBudget := changes["max_downtime_ms"].(int64)
	if instance == "" || len(changes) > 1 || (len(changes) == 1 && !setBudget) {
		fmt.Fprintln(stderr, "drove settings: --instance takes only --user-migration, --max-downtime and --reason")
		return exitUsage
	}
	if userMig != "" {
		var allowed *bool
		if userMig != "default" {
			b, err := strconv.ParseBool(userMig)
			if err != nil {
				fmt.Fprintln(stderr, "drove settings: --user-migration: want true, false or default")
				return exitUsage
			}
			allowed = &b
		}
		if err := api.SetUserMigration(ctx, instance, allowed); err != nil {
			return fail(stderr, "settings", err)
		}
		fmt.Fprintf(stdout, "User migrations of %s: %s.\n", instance, userMig)
	}
	if setBudget {
		ans, err := api.SetMaxDowntime(ctx, instance, budget, reason)
		if err != nil {
			return fail(stderr, "settings", err)
		}
		fmt.Fprintf(stdout, "Downtime budget of %s: %s.\n", instance, budgetWords(ans.MaxDowntimeMS))
	}
	if userMig != "" || setBudget {
		return exitOK
	}
	in, err := api.Instance(ctx, instance)
	if err != nil {
		return fail(stderr, "settings", err)
	}
	if cf.json {
		return printJSON(stdout, map[string]any{"instance": in.Name, "user_migration": in.UserMigration, "max_downtime_ms": in.MaxDowntimeMS})
	}
	um := "default (follows allow_user_migrations)"
	if in.UserMigration != nil {
		um = strconv.FormatBool(*in.UserMigration)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "instance\t%s\n", in.Name)
	fmt.Fprintf(tw, "user_migration\t%s\n", um)
	fmt.Fprintf(tw, "max_downtime_ms\t%s\n", budgetWords(in.MaxDowntimeMS))
	tw.Flush()
	return exitOK
}

// budgetWords says an instance's own budget: 0 follows the global one.
func budgetWords(ms int64) string {
	if ms == 0 {
		return "0 (follows the settings' max_downtime_ms)"
	}
	return strconv.FormatInt(ms, 10) + " ms"
}
