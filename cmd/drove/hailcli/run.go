package hailcli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/htoolsdata"
	"github.com/drovehq/drove/planner/iallocator"
)

// Run is `drove iallocator ARGS` (or the binary run as hail): it answers
// the request and returns the exit status. name is the program's name in
// messages.
func Run(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, rest, err := parse(args)
	if errors.Is(err, errUsage) {
		fmt.Fprintf(stderr, "%v\n\n", err)
		usage(stderr, name)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "Error while parsing command line arguments:\n%v\n", err)
		return 1
	}
	switch {
	case o.Help:
		usage(stdout, name)
		return 0
	case o.Version:
		fmt.Fprintln(stdout, version(name))
		return 0
	case o.Completion:
		completion(stdout)
		return 0
	case len(rest) == 0:
		fmt.Fprintln(stderr, "Error: This program needs an input file.")
		return 1
	case len(rest) > 1:
		fmt.Fprintln(stderr, "Error: Only one argument is accepted (the input file)")
		return 1
	}
	if err := answer(o, rest[0], stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}

// answer reads the request, plans it and prints the answer, with the
// listings and saved files the options ask for.
func answer(o Options, path string, stdin io.Reader, stdout, stderr io.Writer) error {
	c, r, err := load(o, path, stdin)
	if err != nil {
		return err
	}
	if o.Verbose > 1 {
		fmt.Fprintf(stderr, "Received request: %s\n", describeRequest(c, r))
	}
	if o.Verbose > 2 {
		fmt.Fprintf(stderr, "Received cluster data: %d groups, %d nodes, %d instances\n", len(c.Groups), len(c.Nodes), len(c.Instances))
	}
	if o.PrintNodes {
		fmt.Fprintf(stderr, "\nInitial cluster status:\n%s\n", nodeTable(c, o.Fields))
	}
	if err := save(o.Save, "pre-ialloc", "before iallocator run", c, stderr); err != nil {
		return err
	}
	opts := planner.DefaultOptions()
	opts.IgnoreSoftErrors, opts.NoCapacityChecks = o.IgnoreSoftErr, o.NoCapacity
	if o.MaxMovesPerNode > 0 {
		opts.MaxMovesPerNode = o.MaxMovesPerNode
	}
	p, err := planner.Compute(c, r, opts)
	if err != nil {
		return err
	}
	out, err := iallocator.EncodeAnswer(r.Kind, p)
	if err != nil {
		return err
	}
	if _, err := stdout.Write(out); err != nil {
		return err
	}
	if o.Verbose > 0 {
		fmt.Fprintf(stderr, "Drove's explanation: %s\n", iallocator.Explain(p))
	}
	after := htoolsdata.After(c, r, p)
	if o.PrintNodes {
		fmt.Fprintf(stderr, "\nFinal cluster status:\n%s\n", nodeTable(after, o.Fields))
	}
	return save(o.Save, "post-ialloc", "after iallocator run", after, stderr)
}

// load reads the request and the cluster it is about: the request's own,
// or, as hail does with -t or --simulate, the one those name (a
// simulated cluster first, as in hail).
func load(o Options, path string, stdin io.Reader) (*planner.Cluster, planner.Request, error) {
	var input []byte
	var err error
	if path == "-" {
		input, err = io.ReadAll(stdin)
	} else {
		input, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, planner.Request{}, err
	}
	c, r, err := iallocator.Decode(input)
	if err != nil {
		return nil, r, fmt.Errorf("invalid iallocator request: %w", err)
	}
	switch {
	case len(o.Simulate) > 0:
		if c, err = htoolsdata.Simulate(o.Simulate); err != nil {
			return nil, r, err
		}
	case o.TextData != "":
		data, err := os.ReadFile(o.TextData)
		if err != nil {
			return nil, r, err
		}
		if c, err = htoolsdata.Parse(data); err != nil {
			return nil, r, fmt.Errorf("%s: %w", o.TextData, err)
		}
	}
	if o.StaticNodeMem >= 0 && c.StaticNodeMemory > 0 {
		c.StaticNodeMemory = o.StaticNodeMem
	}
	if o.Restrict != nil {
		// hail's option replaces a restriction the request carries.
		for i := range r.New {
			r.New[i].RestrictToNodes = o.Restrict
		}
	}
	return c, r, nil
}

// save writes the cluster in Ganeti's text format to PREFIX.SUFFIX, as
// hail's -S does.
func save(prefix, suffix, when string, c *planner.Cluster, stderr io.Writer) error {
	if prefix == "" {
		return nil
	}
	path := prefix + "." + suffix
	if err := os.WriteFile(path, htoolsdata.Format(c), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "The cluster state %s has been written to file '%s'\n", when, path)
	return nil
}

func version(name string) string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return fmt.Sprintf("%s (drove) version %s\nstands in for hail of Ganeti 3.0 (IAllocator protocol)", name, v)
}

func usage(w io.Writer, name string) {
	fmt.Fprintf(w, `Usage: %s [OPTION...] REQUEST.json|-

Reads a Ganeti IAllocator request (allocate, multi-allocate, relocate,
allocate-secondary, node-evacuate or change-group) from the file, or from
standard input with "-", and prints the answer Ganeti expects: {"success",
"info", "result"}. Ganeti can run it in place of hail; options may come
before or after the file. Evacuation jobs carry "depends" so that they can
run in parallel without overfilling a node. A malformed request is
explained on standard error (exit status 1).

`, name)
	for _, op := range options() {
		fmt.Fprintf(w, "  %-36s %s\n", flagNames(op), op.help)
	}
}

func flagNames(op option) string {
	var names []string
	meta := ""
	switch op.arg {
	case reqArg:
		meta = "=" + op.meta
	case optArg:
		meta = "[=" + op.meta + "]"
	}
	if op.short != 0 {
		names = append(names, "-"+string(op.short))
	}
	names = append(names, "--"+op.long+meta)
	return strings.Join(names, ", ")
}

// completion prints hail's --help-completion: each option's spellings and
// the kind of its value, then the one file argument.
func completion(w io.Writer) {
	for _, op := range options() {
		var names []string
		if op.short != 0 {
			names = append(names, "-"+string(op.short))
		}
		names = append(names, "--"+op.long)
		fmt.Fprintf(w, "%s %s\n", strings.Join(names, ","), op.compl)
	}
	fmt.Fprintln(w, "choices=file 1 1")
}
