package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"
)

func runUndrain(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("undrain", `
Usage: drove undrain [--reason WHY] NODE

Returns a drained node to service after maintenance: the planner may place
instances on it again. Refused while an active evacuation is emptying it
(cancel it or wait for its end).`, stderr)
	return nodeAction(fs, "undrain", args, stdout, stderr)
}

func runNode(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("node", `
Usage: drove node offline|online [--reason WHY] NODE

offline declares a node down: nothing is placed on it, and moves to or
from it end as a lost node's do (a move to it fails and its source keeps
the instance; a move from it that cannot finish says an operator must act).
online returns it to service, also after the planner declared it lost.`, stderr)
	if len(args) == 0 || (args[0] != "offline" && args[0] != "online") {
		fs.Usage()
		return exitUsage
	}
	return nodeAction(fs, args[0], args[1:], stdout, stderr)
}

// nodeAction asks for action on one node and waits for the planner
// service's answer.
func nodeAction(fs *flag.FlagSet, action string, args []string, stdout, stderr io.Writer) int {
	var cf clientFlags
	cf.register(fs)
	reason := fs.String("reason", "", "why, kept in the log's reason trail")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for the planner service's answer (0: do not wait)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	c := cf.client()
	a, err := c.NodeAct(context.Background(), pos[0], action, *reason)
	if err != nil {
		fmt.Fprintf(stderr, "drove: %v\n", err)
		return exitError
	}
	if *wait <= 0 {
		fmt.Fprintf(stdout, "%s of %s requested (%s).\n", action, pos[0], a.Request)
		return exitOK
	}
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	done, err := c.AwaitNodeAction(ctx, a.Request)
	if err != nil {
		fmt.Fprintf(stderr, "drove: %s of %s (%s): %v\n", action, pos[0], a.Request, err)
		return exitError
	}
	fmt.Fprintf(stdout, "%s\n", done.Answer)
	return exitOK
}
