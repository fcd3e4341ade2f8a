package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
)

func runAudit(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("audit", `
Usage: drove audit [--denied | --outcome requested|allowed|denied] [--who NAME] [flags]

The audit trail (operators): who asked what and who was refused, in log
order. Asks are evacuations, group changes, approvals, cancels, migrate
actions, settings changes and node actions, each with the reason given;
refusals are the gateway's 401 and 403 answers (drove.audit), a flood of
them folded into one line with its count. --json prints one JSON object a
line (NDJSON).`, stderr)
	var cf clientFlags
	cf.register(fs)
	denied := fs.Bool("denied", false, "only the refusals (--outcome denied)")
	outcome := fs.String("outcome", "", "only entries with this outcome: requested, allowed or denied")
	who := fs.String("who", "", "only what this actor asked, or this account was refused")
	pageSize := fs.Int("page", 500, "entries fetched per page")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 0 || (*denied && *outcome != "" && *outcome != "denied") {
		fs.Usage()
		return exitUsage
	}
	if *denied {
		*outcome = "denied"
	}
	ctx, stop := signalContext()
	defer stop()
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	if !cf.json {
		fmt.Fprintln(tw, "TIME\tOUTCOME\tWHO\tWHAT\tWHY")
	}
	n := 0
	err = cf.client().Audit(ctx, client.AuditFilter{Outcome: *outcome, Actor: *who}, *pageSize, func(e wire.AuditEntry, raw json.RawMessage) error {
		n++
		if cf.json {
			_, err := fmt.Fprintln(stdout, string(raw))
			return err
		}
		_, err := fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format("2006-01-02 15:04:05.000"),
			auditOutcome(e), auditWho(e), e.Action, e.Why)
		return err
	})
	if !cf.json {
		if n == 0 {
			fmt.Fprintln(tw, "(no entries)")
		}
		if ferr := tw.Flush(); err == nil {
			err = ferr
		}
	}
	if err != nil {
		return fail(stderr, "audit", err)
	}
	return exitOK
}

// auditOutcome is the outcome, with the count of a folded refusal line.
func auditOutcome(e wire.AuditEntry) string {
	if e.Count > 1 {
		return e.Outcome + " x" + strconv.Itoa(e.Count)
	}
	return e.Outcome
}

// auditWho names the caller with its role where the record has it.
func auditWho(e wire.AuditEntry) string {
	if e.Account != "" {
		return e.Account
	}
	return e.Actor
}
