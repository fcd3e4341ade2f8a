package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/iallocator"
)

func runIAllocator(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("drove iallocator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts := planner.DefaultOptions()
	fs.IntVar(&opts.MaxMovesPerNode, "max-moves-per-node", opts.MaxMovesPerNode,
		"most moves a node sends at once when the jobs run in parallel")
	fs.BoolVar(&opts.IgnoreSoftErrors, "ignore-soft-errors", false,
		"let moves break soft constraints (N+1, exclusion tags, vCPU and spindle ratios)")
	fs.BoolVar(&opts.NoCapacityChecks, "no-capacity-checks", false,
		"place new instances even where the cluster would then lose N+1 redundancy (hail's --no-capacity-checks)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: drove iallocator [flags] REQUEST.json|-

Reads a Ganeti IAllocator request (allocate, multi-allocate, relocate,
node-evacuate or change-group) from the file, or from standard input with
"-", and prints the result Ganeti expects on standard output: {"success",
"info", "result"}, where result is the chosen nodes (allocate, relocate),
[[allocated], [failed]] (multi-allocate) or [moved, failed, jobs] (the
others). Ganeti can use it in place of hail. Evacuation jobs carry
"depends" so that they can run in parallel without overfilling a node.

On a malformed request it prints the problem, naming the field, on standard
error and exits 1 with nothing on standard output.

Flags:`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	var input []byte
	var err error
	if path := fs.Arg(0); path == "-" {
		input, err = io.ReadAll(stdin)
	} else {
		input, err = os.ReadFile(path)
	}
	if err != nil {
		fmt.Fprintf(stderr, "drove iallocator: %v\n", err)
		return 1
	}
	out, err := iallocator.Answer(input, opts)
	if err != nil {
		fmt.Fprintf(stderr, "drove iallocator: %v\n", err)
		return 1
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "drove iallocator: %v\n", err)
		return 1
	}
	return 0
}
