package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// toolRun is one run of an external planner on a request file.
type toolRun struct {
	Wall     time.Duration
	TimedOut bool
	Err      string // exit status or start failure; empty on success
	Stdout   []byte
	Stderr   string
	MaxRSSKB int64
}

// runTool runs bin with args, killing it after budget, and times its wall
// clock from start to exit.
func runTool(ctx context.Context, budget time.Duration, bin string, args ...string) toolRun {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := toolRun{Wall: time.Since(start), Stdout: out.Bytes(), Stderr: errb.String()}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.MaxRSSKB = ru.Maxrss
		}
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		r.TimedOut = true
		r.Err = "killed after the budget of " + budget.String()
	case err != nil:
		r.Err = err.Error()
	}
	return r
}
