package hailcli

import (
	"fmt"
	"strconv"
	"strings"
)

// argKind says whether an option takes a value.
type argKind int

const (
	noArg argKind = iota
	reqArg
	optArg
)

// option is one command-line option, in getopt's terms.
type option struct {
	short rune
	long  string
	arg   argKind
	meta  string // the value's name in the help
	help  string
	compl string // hail's completion kind, for --help-completion
	set   func(o *Options, v string) error
}

// Options are the parsed command line.
type Options struct {
	PrintNodes      bool
	Fields          []string
	Save            string
	TextData        string
	Simulate        []string
	Verbose         int
	IgnoreSoftErr   bool
	NoCapacity      bool
	Restrict        []string
	StaticNodeMem   int64
	MaxMovesPerNode int
	Help, Version   bool
	Completion      bool
}

// options lists hail's options in hail's order, then Drove's own. A
// hail option Drove has nothing to do for (it reads no dynamic
// utilisation and asks no monitoring daemon) is accepted and says so in
// its help.
func options() []option {
	return []option{
		{'p', "print-nodes", optArg, "FIELDS", "print the initial and final node list (on standard error)", "none",
			func(o *Options, v string) error { o.PrintNodes, o.Fields = true, splitComma(v); return nil }},
		{'S', "save", reqArg, "FILE", "save the cluster before and after the request to FILE.pre-ialloc and FILE.post-ialloc", "none",
			func(o *Options, v string) error { o.Save = v; return nil }},
		{'t', "text-data", reqArg, "FILE", "take the cluster from FILE (Ganeti's text format) instead of the request", "file",
			func(o *Options, v string) error { o.TextData = v; return nil }},
		{0, "simulate", reqArg, "SPEC", "take an empty simulated cluster, one group per 'alloc_policy,num_nodes,disk,ram,cpu' (repeatable)", "string",
			func(o *Options, v string) error { o.Simulate = append(o.Simulate, v); return nil }},
		{'v', "verbose", noArg, "", "increase the verbosity level", "none",
			func(o *Options, _ string) error { o.Verbose++; return nil }},
		{0, "ignore-dynu", noArg, "", "ignore dynamic utilisation information (Drove reads none)", "none",
			func(*Options, string) error { return nil }},
		{0, "ignore-soft-errors", noArg, "", "let placements break soft constraints (N+1, exclusion tags, vCPU and spindle ratios)", "none",
			func(o *Options, _ string) error { o.IgnoreSoftErr = true; return nil }},
		{0, "no-capacity-checks", noArg, "", "disable capacity checks (global N+1 redundancy of new instances)", "none",
			func(o *Options, _ string) error { o.NoCapacity = true; return nil }},
		{0, "restrict-allocation-to", reqArg, "NODE,...", "restrict allocations to the given nodes", "manynodes",
			func(o *Options, v string) error { o.Restrict = splitComma(v); return nil }},
		{0, "mond", optArg, "CHOICE", "query the monitoring daemons: Drove does not, so only 'no' is accepted", "choices=yes,no", setMond},
		{0, "mond-xen", noArg, "", "also consider xen-specific collectors in MonD queries (no effect without --mond)", "none",
			func(*Options, string) error { return nil }},
		{0, "static-kvm-node-memory", reqArg, "N", "memory in MiB the node itself uses on KVM (0: as the node reports)", "integer", setStaticMem},
		{0, "max-moves-per-node", reqArg, "N", "most moves a node sends at once when an evacuation's jobs run in parallel (Drove's)", "integer", setMaxMoves},
		{'V', "version", noArg, "", "show the version of the program", "none",
			func(o *Options, _ string) error { o.Version = true; return nil }},
		{'h', "help", noArg, "", "show help", "none",
			func(o *Options, _ string) error { o.Help = true; return nil }},
		{0, "help-completion", noArg, "", "show completion info", "none",
			func(o *Options, _ string) error { o.Completion = true; return nil }},
	}
}

func setMond(o *Options, v string) error {
	if v == "" || v == "yes" {
		return fmt.Errorf("--mond: Drove does not query monitoring daemons")
	}
	if v != "no" {
		return fmt.Errorf("invalid choice '%s', pass one of 'yes' or 'no'", v)
	}
	return nil
}

func setStaticMem(o *Options, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("--static-kvm-node-memory: %q is not a non-negative integer", v)
	}
	o.StaticNodeMem = n
	return nil
}

func setMaxMoves(o *Options, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("--max-moves-per-node: %q is not a positive integer", v)
	}
	o.MaxMovesPerNode = n
	return nil
}

func splitComma(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}
