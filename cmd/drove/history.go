package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/drovehq/drove/gateway/wire"
)

func runHistory(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("history", `
Usage: drove history instance NAME | node NAME | request ID | migration ID [flags]

The story of an instance, a node, a request or a per-instance migration:
every event that touched it, in log order, with its time, type, who asked
and why (the event's reason trail, and the operator or owner who asked for
its request or migration), what changed (placements before and after,
state transitions) and the request or migration it belongs to. --json
prints one JSON object a line (NDJSON), --csv a CSV table; both carry the
log position (topic, partition, offset) of each event. Owners' tokens read
only their own instances' histories.`, stderr)
	var cf clientFlags
	cf.register(fs)
	asCSV := fs.Bool("csv", false, "print CSV (with a header line)")
	pageSize := fs.Int("page", 500, "events fetched per page")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 2 {
		fs.Usage()
		return exitUsage
	}
	ctx, stop := signalContext()
	defer stop()
	out := newHistoryPrinter(stdout, cf.json, *asCSV)
	err = cf.client().History(ctx, pos[0], pos[1], *pageSize, out.print)
	if ferr := out.flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return fail(stderr, "history", err)
	}
	return exitOK
}

// historyPrinter writes entries as text, NDJSON or CSV.
type historyPrinter struct {
	json bool
	csv  *csv.Writer
	tw   *tabwriter.Writer
	w    io.Writer
	n    int
}

func newHistoryPrinter(w io.Writer, asJSON, asCSV bool) *historyPrinter {
	p := &historyPrinter{json: asJSON, w: w}
	switch {
	case asJSON:
	case asCSV:
		p.csv = csv.NewWriter(w)
		_ = p.csv.Write([]string{"seq", "time", "type", "topic", "partition", "offset", "actor", "why",
			"requester", "requester_why", "request", "migration", "instance", "summary",
			"placement_before", "placement_after", "state_before", "state_after", "id"})
	default:
		p.tw = tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
		fmt.Fprintln(p.tw, "TIME\tTYPE\tWHO\tWHAT\tWHY")
	}
	return p
}

func (p *historyPrinter) print(e wire.HistoryEntry, raw json.RawMessage) error {
	p.n++
	switch {
	case p.json:
		_, err := fmt.Fprintln(p.w, string(raw))
		return err
	case p.csv != nil:
		return p.csv.Write([]string{strconv.FormatInt(e.Seq, 10), e.Time.UTC().Format(time.RFC3339Nano), e.Type,
			e.Topic, strconv.Itoa(int(e.Partition)), strconv.FormatInt(e.Offset, 10), e.Actor, e.Why,
			e.Requester, e.RequesterWhy, e.Request, e.Migration, e.Instance, e.Summary,
			placementText(e.Before), placementText(e.After), e.From, e.To, e.ID})
	}
	who := e.Actor
	if e.Requester != "" && e.Requester != e.Actor {
		who += " for " + e.Requester
	}
	why := e.RequesterWhy
	if why == "" || e.Requester == e.Actor {
		why = e.Why
	}
	_, err := fmt.Fprintf(p.tw, "%s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format("2006-01-02 15:04:05.000"),
		e.Type, who, e.Summary, why)
	return err
}

func (p *historyPrinter) flush() error {
	switch {
	case p.csv != nil:
		p.csv.Flush()
		return p.csv.Error()
	case p.tw != nil:
		if p.n == 0 {
			fmt.Fprintln(p.tw, "(no events)")
		}
		return p.tw.Flush()
	}
	return nil
}

func placementText(p *wire.Placement) string {
	if p == nil {
		return ""
	}
	s := p.Primary
	if p.Secondary != "" {
		s += "+" + p.Secondary
	}
	if p.Group != "" {
		s += " (" + p.Group + ")"
	}
	return s
}
