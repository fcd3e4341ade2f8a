package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/drovehq/drove/projector"
)

// pointInTimeFlags are drove replay's point-in-time modes.
type pointInTimeFlags struct {
	at   string
	list bool
	drop string
}

func (p *pointInTimeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.at, "at", "", "fold the log up to TIME (RFC 3339) or TOPIC/PARTITION@OFFSET,... into a kept schema")
	fs.BoolVar(&p.list, "list", false, "list the point-in-time schemas")
	fs.StringVar(&p.drop, "drop", "", "drop the point-in-time schema NAME")
}

func (p pointInTimeFlags) set() bool { return p.at != "" || p.list || p.drop != "" }

// parseBound reads --at: a time, or positions topic/partition@offset.
func parseBound(s string) (projector.Bound, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return projector.Bound{At: t}, nil
	}
	if !strings.Contains(s, "@") {
		return projector.Bound{}, fmt.Errorf("--at %q: want an RFC 3339 time or TOPIC/PARTITION@OFFSET,...", s)
	}
	b := projector.Bound{Offsets: map[string]map[int32]int64{}}
	for _, f := range strings.Split(s, ",") {
		place, off, ok := strings.Cut(strings.TrimSpace(f), "@")
		i := strings.LastIndex(place, "/")
		if !ok || i < 1 {
			return b, fmt.Errorf("--at: %q is not TOPIC/PARTITION@OFFSET", f)
		}
		p, err1 := strconv.ParseInt(place[i+1:], 10, 32)
		o, err2 := strconv.ParseInt(off, 10, 64)
		if err1 != nil || err2 != nil || p < 0 || o < 0 {
			return b, fmt.Errorf("--at: %q is not TOPIC/PARTITION@OFFSET", f)
		}
		topic := place[:i]
		if b.Offsets[topic] == nil {
			b.Offsets[topic] = map[int32]int64{}
		}
		b.Offsets[topic][int32(p)] = o
	}
	return b, nil
}

// runPointInTime builds, lists or drops point-in-time schemas.
func runPointInTime(sf serviceFlags, pit pointInTimeFlags, asJSON bool, stdout, stderr io.Writer) int {
	ctx, stop := signalContext()
	defer stop()
	pool, err := sf.pool(ctx)
	if err != nil {
		return fail(stderr, "replay", err)
	}
	defer pool.Close()
	if err := answering(ctx, pool); err != nil {
		return fail(stderr, "replay", err)
	}
	cfg := projector.Config{Kafka: sf.kafka("drove-replay"), Schema: sf.schema, Logger: sf.logger(stderr)}
	switch {
	case pit.drop != "":
		if err := projector.DropAsOf(ctx, cfg, pool, pit.drop); err != nil {
			return fail(stderr, "replay", err)
		}
		fmt.Fprintf(stdout, "Dropped %s\n", pit.drop)
		return exitOK
	case pit.list:
		vs, err := projector.ListAsOf(ctx, cfg, pool)
		if err != nil {
			return fail(stderr, "replay", err)
		}
		if asJSON {
			return printJSON(stdout, vs)
		}
		tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tBOUND\tEVENTS\tBUILT")
		for _, v := range vs {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", v.Name, boundText(v), v.Events, v.BuiltAt.UTC().Format(time.RFC3339))
		}
		return flushExit(tw)
	}
	b, err := parseBound(pit.at)
	if err != nil {
		fmt.Fprintln(stderr, "drove replay:", err)
		return exitUsage
	}
	v, err := projector.AsOf(ctx, cfg, pool, b)
	if err != nil {
		return fail(stderr, "replay", err)
	}
	if asJSON {
		return printJSON(stdout, v)
	}
	verb := "Kept"
	if v.Built {
		verb = fmt.Sprintf("Folded %d events in %s into", v.Events, v.Took.Round(time.Millisecond))
	}
	fmt.Fprintf(stdout, "%s %s (the views at %s).\nQuery it: SET search_path TO %s; SELECT name, primary_node FROM instances;\n",
		verb, v.Name, boundText(v), v.Name)
	return exitOK
}

func boundText(v projector.AsOfView) string {
	if v.At != nil {
		return v.At.UTC().Format(time.RFC3339Nano)
	}
	var parts []string
	for _, topic := range slices.Sorted(maps.Keys(v.Offsets)) {
		for _, p := range slices.Sorted(maps.Keys(v.Offsets[topic])) {
			parts = append(parts, fmt.Sprintf("%s/%d@%d", topic, p, v.Offsets[topic][p]))
		}
	}
	return strings.Join(parts, ",")
}

func flushExit(tw *tabwriter.Writer) int {
	if err := tw.Flush(); err != nil {
		return exitError
	}
	return exitOK
}
