package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/drovehq/drove/cmd/drove/termview"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/progress"
	"github.com/drovehq/drove/gateway/wire"
)

const migrateUsage = `
Usage: drove migrate INSTANCE [flags]
       drove migrate --list

Moves one instance to another server, as Triton's RFD 34 migrates: a new
copy is reserved on the target ("begin"), the instance's data is copied
while it keeps running ("sync", then incremental re-syncs of what it wrote
meanwhile), then the instance is stopped briefly, the last changes are
sent, and it starts on the target ("switch"). The source copy is kept until
the migration is finalized (explicitly, or after the operators' grace
period); until then --rollback moves the instance back.

With no action flag the migration is automatic: every phase runs on its
own, re-syncing until the last sync is small enough. Or run the phases
yourself: --begin, then --sync (any number of times), then --switch.

  --automatic        run every phase on its own (the default action)
  --begin            reserve the target and mark the instance migrating
  --sync             copy the data (first a full send, then what changed);
                     a running VM with nothing left to copy stops at the
                     switch point in its sync and is switched at once
  --switch           stop, send the last changes, start on the target
  --pause            pause a running sync; resume with --sync or --switch
  --abort            stop the migration and return the instance to where and
                     how it was (before the switch only; not resumable)
  --rollback         after a switch, move the instance back to the source
  --finalize         after a switch, drop the source copy
  --schedule TIME    begin and sync now, switch at TIME (RFC 3339, or a
                     delay such as 2h30m); again on a scheduled migration
                     changes its time
  --target NODE      the server to move to (default: the planner's choice)
  --max-downtime MS  the downtime budget in milliseconds (default: the
                     instance's own, else the settings'; see drove settings
                     --instance): the migration re-syncs until its switch is
                     predicted to fit, and fails, the instance left on its
                     source, when it cannot
  --estimate         say how long a migration would take, and stop
  --watch            follow the migration: each step with a check mark and
                     its duration when done, percent and ETA while running.
                     Ctrl-C stops watching, never the migration.
  --list             list migrations: instance, state, phase, progress
  --yes              do not ask for confirmation (it is not asked either
                     when stdin is not a terminal)

Owners (tenants) may migrate their own instances where the operators allow
user migrations; operators may migrate anything. Set DROVE_TOKEN to your
bearer token when the gateway requires one.

Exit status: 0 done (or accepted), 1 error or failed migration, 2 usage.`

func runMigrate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("migrate", migrateUsage, stderr)
	var cf clientFlags
	cf.register(fs)
	actions := map[string]*bool{}
	for _, a := range []string{"automatic", "begin", "sync", "switch", "abort", "pause", "rollback", "finalize"} {
		actions[a] = fs.Bool(a, false, "action "+a+" (see above)")
	}
	schedule := fs.String("schedule", "", "begin and sync now, switch at this time (RFC 3339 or a delay like 2h)")
	target := fs.String("target", "", "the server to migrate to")
	maxDown := fs.Int64("max-downtime", 0, "the downtime budget in milliseconds")
	estimate := fs.Bool("estimate", false, "print an estimate and stop")
	watch := fs.Bool("watch", false, "follow the migration until its phase ends")
	list := fs.Bool("list", false, "list migrations")
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	ctx := context.Background()
	api := cf.client()
	if *list {
		return listMigrations(ctx, api, cf, stdout, stderr)
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	instance := pos[0]
	opts := client.MigrateOptions{Target: *target}
	fs.Visit(func(f *flag.Flag) { // given, even as 0 or a negative the gateway refuses
		if f.Name == "max-downtime" {
			opts.MaxDowntimeMS = maxDown
		}
	})
	action, code := chosenAction(actions, *schedule, &opts, stderr)
	if code != exitOK {
		return code
	}
	switch {
	case *estimate:
		return printEstimate(ctx, api, cf, instance, opts, stdout, stderr)
	case action == "" && *watch:
		return watchMigration(ctx, api, instance, "", stdout, stderr)
	case action == "":
		action = "automatic"
	}
	if !*yes && readerIsTerminal(stdin) && !confirmed(ctx, api, instance, action, opts, stdin, stdout) {
		fmt.Fprintln(stdout, "Nothing was done.")
		return exitOK
	}
	id, code := startAction(ctx, api, cf, instance, action, opts, *watch, stdout, stderr)
	if id == "" {
		return code
	}
	if *watch {
		return watchMigration(ctx, api, instance, id, stdout, stderr)
	}
	fmt.Fprintf(stdout, "You can watch the migration using:\n  drove migrate --watch %s\n", instance)
	if action != "abort" && action != "finalize" {
		fmt.Fprintf(stdout, "or you can pause or abort the migration using:\n  drove migrate --pause|--abort %s\n", instance)
	}
	return exitOK
}

// chosenAction is the one action flag given ("" for none), or schedule
// when --schedule is, with its time set in opts.
func chosenAction(actions map[string]*bool, schedule string, opts *client.MigrateOptions, stderr io.Writer) (string, int) {
	action := ""
	for name, set := range actions {
		if *set {
			if action != "" {
				fmt.Fprintf(stderr, "drove migrate: --%s and --%s: give one action\n", action, name)
				return "", exitUsage
			}
			action = name
		}
	}
	if schedule == "" {
		return action, exitOK
	}
	if action != "" {
		fmt.Fprintf(stderr, "drove migrate: --schedule and --%s: give one action\n", action)
		return "", exitUsage
	}
	at, err := parseWhen(schedule, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "drove migrate: --schedule: %v\n", err)
		return "", exitUsage
	}
	opts.ScheduledAt = &at
	return "schedule", exitOK
}

func printEstimate(ctx context.Context, api *client.Client, cf clientFlags, instance string, opts client.MigrateOptions,
	stdout, stderr io.Writer) int {
	e, err := api.Estimate(ctx, instance, opts)
	if err != nil {
		return fail(stderr, "migrate", err)
	}
	if cf.json {
		return printJSON(stdout, e)
	}
	fmt.Fprintf(stdout, "Migrating %s would take about %s, with %s of downtime, sending %s.\n(%s)\n",
		instance, human(e.TotalSeconds), human(e.DowntimeSeconds), events.FormatBytes(e.Bytes), e.How)
	if e.MaxDowntimeMS > 0 {
		fmt.Fprintf(stdout, "Downtime budget: %d ms; the switch waits, re-syncing, until its predicted downtime fits.\n", e.MaxDowntimeMS)
	}
	return exitOK
}

// confirmed says what the action will do and asks whether to go on.
func confirmed(ctx context.Context, api *client.Client, instance, action string, opts client.MigrateOptions,
	stdin io.Reader, stdout io.Writer) bool {
	fmt.Fprint(stdout, describe(ctx, api, instance, action, opts))
	fmt.Fprint(stdout, "Do you wish to continue y/N? ")
	line, _ := bufio.NewReader(stdin).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

// startAction asks the gateway for the action and says so. It returns the
// migration's id, or "" with the exit code when there is nothing more to
// do (an error, or --json without --watch, which prints the answer).
func startAction(ctx context.Context, api *client.Client, cf clientFlags, instance, action string,
	opts client.MigrateOptions, watch bool, stdout, stderr io.Writer) (string, int) {
	if action == "schedule" {
		m, err := api.Schedule(ctx, instance, opts)
		if err != nil {
			return "", fail(stderr, "migrate", err)
		}
		if cf.json && !watch {
			return "", printJSON(stdout, m)
		}
		fmt.Fprintf(stdout, "Scheduling migration %s of %s.\n", m.ID, instance)
		if m.ScheduledAt != nil {
			fmt.Fprintf(stdout, "Initial scheduling complete - the switch will run at %s.\n", m.ScheduledAt.Local().Format(time.RFC1123))
		}
		return m.ID, exitOK
	}
	a, err := api.Migrate(ctx, instance, action, opts)
	if err != nil {
		return "", fail(stderr, "migrate", err)
	}
	if cf.json && !watch {
		return "", printJSON(stdout, a)
	}
	what := "Migration"
	if action != "automatic" {
		what = strings.ToUpper(action[:1]) + action[1:] + " of the migration"
	}
	fmt.Fprintf(stdout, "%s of %s has started (migration %s).\n", what, instance, a.Migration)
	return a.Migration, exitOK
}

// describe says what an action will do, with the estimate where one
// applies (RFD 34's CLI).
func describe(ctx context.Context, api *client.Client, instance, action string, o client.MigrateOptions) string {
	est := func() string {
		e, err := api.Estimate(ctx, instance, o)
		if err != nil {
			return "(no estimate: " + err.Error() + ")\n"
		}
		return fmt.Sprintf("The migration will take approximately %s, with about %s of downtime (%s to send).\n",
			human(e.TotalSeconds), human(e.DowntimeSeconds), events.FormatBytes(e.Bytes))
	}
	to := "a server the planner chooses"
	if o.Target != "" {
		to = o.Target
	}
	switch action {
	case "automatic":
		return fmt.Sprintf("This will migrate instance %s to %s, running every phase on its own.\n", instance, to) + est()
	case "begin":
		return fmt.Sprintf("This will begin migrating instance %s to %s: the target is reserved,\nafter which you can run the sync and switch phases.\n", instance, to)
	case "sync":
		return fmt.Sprintf("This will sync instance %s's data to its target; you can sync again\nor switch afterwards.\n", instance)
	case "switch":
		return fmt.Sprintf("This will switch instance %s: it stops, its last changes are sent, and it\nstarts on the target.\n", instance)
	case "schedule":
		return fmt.Sprintf("This will migrate instance %s to %s: begin and sync now, switch at %s.\n", instance, to, o.ScheduledAt.Local().Format(time.RFC1123)) + est()
	case "abort":
		return fmt.Sprintf("This will abort the migration of instance %s and return it to its prior state.\nYou will need to start a new migration to migrate it.\n", instance)
	case "pause":
		return fmt.Sprintf("This will pause the migration of instance %s, stopping its running sync now.\nThe last complete sync stays on the target as the base of the next one.\nContinue it with: drove migrate --sync|--switch %s\n", instance, instance)
	case "rollback":
		return fmt.Sprintf("This will move instance %s back to its source, sending only the changes since the switch.\n", instance)
	case "finalize":
		return fmt.Sprintf("This will drop the source copy of instance %s; it can no longer be rolled back.\n", instance)
	}
	return ""
}

// parseWhen reads an RFC 3339 time or a delay from now (2h, +30m).
func parseWhen(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(strings.TrimPrefix(strings.TrimPrefix(s, "in "), "+")); err == nil && d > 0 {
		return now.Add(d).Truncate(time.Second), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2030-01-02T15:04:05Z) nor a delay (2h30m)", s)
}

func listMigrations(ctx context.Context, api *client.Client, cf clientFlags, stdout, stderr io.Writer) int {
	ms, err := api.Migrations(ctx, client.MigrationFilter{})
	if err != nil {
		return fail(stderr, "migrate", err)
	}
	if cf.json {
		return printJSON(stdout, ms)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tSTATE\tPHASE\tPROGRESS\tTARGET\tMIGRATION")
	for _, m := range ms {
		prog := "-"
		if m.TotalBytes > 0 {
			prog = fmt.Sprintf("%d%%", min(100, m.CurrentBytes*100/m.TotalBytes))
			if m.ETASeconds > 0 && m.State == "running" {
				prog += " ETA " + human(m.ETASeconds)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Instance, m.State, m.Phase, prog, m.Target, m.ID)
	}
	tw.Flush()
	return exitOK
}

// watchMigration follows the migration and draws its steps: on a
// terminal a table redrawn in place, in a pipe a line per step change.
// Ctrl-C stops watching only.
func watchMigration(ctx context.Context, api *client.Client, instance, id string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	var last wire.MigrationLine
	draw := migrationLines(stdout)
	if isTerminal(stdout) {
		draw = migrationTable(stdout)
	}
	err := api.WatchMigration(ctx, instance, id, func(ev wire.MigrationLine) bool {
		last = ev
		draw(ev)
		return true
	})
	if ctx.Err() != nil {
		fmt.Fprintf(stdout, "\nStopped watching; the migration goes on. Watch it again with:\n  drove migrate --watch %s\n", instance)
		return exitOK
	}
	var ae *wire.Error
	if errors.As(err, &ae) && ae.Status == 404 && strings.Contains(ae.Message, "has no migration") {
		fmt.Fprintf(stdout, "Instance %s has no migration to watch.\nStart one (and watch it) with:\n  drove migrate %s --watch\nor choose the target:\n  drove migrate %s --target NODE --watch\n",
			instance, instance, instance)
		return exitOK
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fail(stderr, "migrate", err)
	}
	return outcome(context.Background(), api, instance, last, stdout)
}

// migrationTable draws the steps as a table redrawn in place.
func migrationTable(stdout io.Writer) func(wire.MigrationLine) {
	w, h := termSize(stdout)
	screen := &termview.Screen{Out: stdout, Width: w, Height: h}
	view := &termview.MigrationView{}
	header := false
	return func(ev wire.MigrationLine) {
		if !header {
			fmt.Fprintf(stdout, "Migration progress (%s):\n", ev.Migration)
			header = true
		}
		view.Apply(ev)
		screen.Draw(view.Table(ev.Time))
	}
}

// migrationLines prints a line when a step starts, crosses a quarter, or
// ends: for pipes and logs.
func migrationLines(stdout io.Writer) func(wire.MigrationLine) {
	type step struct {
		label   string
		started time.Time
		bucket  int
	}
	steps := map[int]*step{}
	header := false
	return func(ev wire.MigrationLine) {
		if !header {
			fmt.Fprintf(stdout, "Migration progress (%s):\n", ev.Migration)
			header = true
		}
		st := steps[ev.Index]
		if st == nil {
			st = &step{label: progress.StepLabel(ev.Phase), started: ev.Time, bucket: -1}
			if ev.Started != nil {
				st.started = *ev.Started
			}
			steps[ev.Index] = st
		}
		switch ev.Type {
		case "progress":
			line := "☐ " + st.label
			var pct float64
			if ev.Percent != nil {
				pct = *ev.Percent
				line += fmt.Sprintf(" (%.0f%%", pct)
				if ev.Total != nil && *ev.Total > 0 && ev.Current != nil {
					line += ", " + events.FormatBytes(*ev.Current) + " of " + events.FormatBytes(*ev.Total)
				}
				if ev.ETA > 0 {
					line += " ETA " + human(float64(ev.ETA)/1000)
				}
				line += ")"
			}
			if b := int(pct / 25); b != st.bucket {
				st.bucket = b
				fmt.Fprintln(stdout, line)
			}
		case "end":
			took := ev.Time.Sub(st.started).Seconds()
			switch ev.State {
			case "successful":
				fmt.Fprintf(stdout, "✓ %s (%s)\n", st.label, human(took))
			case "paused":
				fmt.Fprintf(stdout, "✓ %s (%s)\n✓ paused\n", st.label, human(took))
			default:
				fmt.Fprintf(stdout, "✗ %s failed: %s\n", st.label, ev.Message)
			}
		}
	}
}

// outcome prints how the watched phase left the migration.
func outcome(ctx context.Context, api *client.Client, instance string, last wire.MigrationLine, stdout io.Writer) int {
	if last.Migration == "" {
		fmt.Fprintln(stdout, "No progress yet.")
		return exitOK
	}
	m, err := api.Migration(ctx, last.Migration)
	// The end event of a phase can reach the watcher before the record
	// that follows it reaches the views: give the record a moment. A
	// record that still says a phase runs (paused at once by a pause) is
	// waited out too, so the next step printed is one the gateway takes.
	for wait := 0; err == nil && (m.State == "running" || m.State == "queued" || m.PhaseRunning) && wait < 75; wait++ {
		time.Sleep(200 * time.Millisecond) // polling the view, bounded
		m, err = api.Migration(ctx, last.Migration)
	}
	if err != nil {
		fmt.Fprintf(stdout, "The last phase ended %s.\n", last.State)
		return exitOK
	}
	switch {
	case m.State == "successful" && m.Finalized:
		fmt.Fprintln(stdout, "Migration was successful; the source copy was removed.")
	case m.State == "successful":
		fmt.Fprintf(stdout, "Migration was successful: %s runs on %s. The source copy on %s is kept until finalized\n(drove migrate --finalize %s), or roll back with drove migrate --rollback %s.\n",
			instance, m.Target, m.Source, instance, instance)
		fmt.Fprint(stdout, downtimeText(m))
	case m.State == "aborted":
		fmt.Fprintln(stdout, "Migration was aborted.", m.Message)
	case m.State == "failed":
		fmt.Fprintf(stdout, "Migration failed: %s\n", m.Error)
		fmt.Fprint(stdout, downtimeText(m))
		if m.ErrorDetail != "" {
			fmt.Fprintln(stdout, m.ErrorDetail)
		}
		return exitError
	case m.State == "paused":
		fmt.Fprintf(stdout, "Migration is paused after phase %s (%d syncs). Continue with:\n  drove migrate --sync|--switch %s\n", m.Phase, m.Syncs, instance)
	case m.State == "scheduled":
		fmt.Fprintf(stdout, "Migration is synced and waits to switch at %s.\n", m.ScheduledAt.Local().Format(time.RFC1123))
	default:
		fmt.Fprintf(stdout, "Migration is %s (phase %s).\n", m.State, m.Phase)
	}
	return exitOK
}

// downtimeText says how long the switch kept the instance down: Drove's
// figure and, when its workload keeps a timeline, the workload's own;
// then what was predicted, against the budget if there is one.
func downtimeText(m *wire.InstanceMigration) string {
	s := ""
	switch {
	case m.DowntimeMS == 0 && m.WorkloadDowntimeMS == 0:
	case m.WorkloadDowntimeMS == 0:
		s = fmt.Sprintf("Downtime: %d ms (measured by Drove; the workload keeps no timeline).\n", m.DowntimeMS)
	default:
		s = fmt.Sprintf("Downtime: %d ms as the workload saw it (its own timeline), %d ms as measured by Drove.\n",
			m.WorkloadDowntimeMS, m.DowntimeMS)
	}
	switch {
	case m.PredictedDowntimeMS == 0:
	case m.MaxDowntimeMS > 0:
		s += fmt.Sprintf("Predicted downtime: %d ms, budget %d ms.\n", m.PredictedDowntimeMS, m.MaxDowntimeMS)
	default:
		s += fmt.Sprintf("Predicted downtime: %d ms (no budget).\n", m.PredictedDowntimeMS)
	}
	return s
}

// human formats seconds as 1h02m03s, 3m18s, 19s or 0.4s.
func human(sec float64) string {
	if sec < 10 {
		return fmt.Sprintf("%.1fs", max(sec, 0))
	}
	d := time.Duration(sec) * time.Second
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

func readerIsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
