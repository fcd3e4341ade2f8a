package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"

	"golang.org/x/sys/unix"

	"github.com/drovehq/drove/cmd/drove/termview"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
)

// clientFlags are the flags every client command takes.
type clientFlags struct {
	gateway string
	actor   string
	json    bool
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	gw := os.Getenv("DROVE_GATEWAY")
	if gw == "" {
		gw = "http://localhost:8080"
	}
	actor := os.Getenv("USER")
	if actor == "" {
		actor = "operator"
	}
	fs.StringVar(&c.gateway, "gateway", gw, "the gateway's URL (env DROVE_GATEWAY)")
	fs.StringVar(&c.actor, "actor", actor, "who is asking, recorded in every event of the request")
	fs.BoolVar(&c.json, "json", false, "print JSON for scripts instead of text")
}

// client is the API client; DROVE_TOKEN, when set, is its bearer token.
func (c *clientFlags) client() *client.Client {
	api := client.New(c.gateway, c.actor)
	api.Token = os.Getenv("DROVE_TOKEN")
	return api
}

// parse parses flags that may come before or after the positional
// arguments (drove evacuate node-a1 --mode all).
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("drove "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, strings.TrimSpace(usage))
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// exit codes of the client commands
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitNotMoved = 3 // the request finished, some instances did not move
)

func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

func runEvacuate(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("evacuate", `
Usage: drove evacuate NODE... [flags]

Empties nodes: moves their instances to other nodes of their groups, in
parallel jobs that never overfill a node, and shows live progress (a line
per job with state, percent and ETA, then a summary). The nodes are marked
drained at once, so no later plan uses them. Ctrl-C stops watching, not the
evacuation. With --dry-run it prints the plan for review, each move with
its predicted downtime (the model of 'drove migrate --estimate', from
what earlier moves measured); run it with 'drove approve REQUEST'.

Exit status: 0 all moved, 3 some instances could not move, 1 error.`, stderr)
	var cf clientFlags
	cf.register(fs)
	var e wire.Evacuation
	fs.StringVar(&e.Mode, "mode", "all", "which role to empty: all, primary-only or secondary-only")
	fs.BoolVar(&e.DryRun, "dry-run", false, "compute the plan and print it; nothing moves until approved")
	fs.StringVar(&e.Reason, "reason", "", "why, recorded in every event of the request")
	fs.BoolVar(&e.IgnoreSoftErrors, "ignore-soft-errors", false, "emergency: allow breaking soft constraints (N+1, exclusion tags)")
	fs.IntVar(&e.MaxMovesPerNode, "max-moves-per-node", 0, "moves a node may send at once (0: the service default, 2)")
	noWatch := fs.Bool("no-watch", false, "print the request id and return")
	nodes, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(nodes) == 0 {
		fs.Usage()
		return exitUsage
	}
	e.Nodes = nodes
	ctx := context.Background()
	a, err := cf.client().Evacuate(ctx, e)
	return afterSubmit(ctx, cf, a, err, *noWatch, stdout, stderr)
}

func runGroupChange(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("group-change", `
Usage: drove group-change INSTANCE... [--to GROUP]... [flags]

Moves instances (all with primaries in one node group) to another group:
the best of the --to groups, or of every other group when none is given.
Shows live progress like 'drove evacuate'.`, stderr)
	var cf clientFlags
	cf.register(fs)
	var g wire.GroupChange
	var to multiFlag
	fs.Var(&to, "to", "a target group (repeatable); none means any other group")
	fs.BoolVar(&g.DryRun, "dry-run", false, "compute the plan and print it; nothing moves until approved")
	fs.StringVar(&g.Reason, "reason", "", "why, recorded in every event of the request")
	noWatch := fs.Bool("no-watch", false, "print the request id and return")
	insts, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(insts) == 0 {
		fs.Usage()
		return exitUsage
	}
	g.Instances, g.TargetGroups = insts, to
	if g.TargetGroups == nil {
		g.TargetGroups = []string{}
	}
	ctx := context.Background()
	a, err := cf.client().ChangeGroup(ctx, g)
	return afterSubmit(ctx, cf, a, err, *noWatch, stdout, stderr)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func afterSubmit(ctx context.Context, cf clientFlags, a *wire.Accepted, err error, noWatch bool, stdout, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintf(stderr, "drove: %v\n", err)
		return exitError
	}
	if a.Plan != nil || noWatch {
		if cf.json {
			return printJSON(stdout, a)
		}
		if a.Plan != nil {
			raw, _ := json.Marshal(a.Plan) // a PlanRow's parts are JSON already: it cannot fail
			printPlan(stdout, a.Request, raw)
			fmt.Fprintf(stdout, "\nNothing moves until you approve: drove approve %s\n", a.Request)
			return exitOK
		}
		fmt.Fprintf(stdout, "Request %s accepted. Follow it with: drove watch %s\n", a.Request, a.Request)
		return exitOK
	}
	if a.Message != "" {
		fmt.Fprintln(stderr, a.Message)
	}
	return watchRequest(ctx, cf, a.Request, stdout, stderr)
}

func watchRequest(ctx context.Context, cf clientFlags, request string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	if !cf.json {
		fmt.Fprintf(stdout, "Request %s (Ctrl-C stops watching, not the request)\n", request)
	}
	p := &termview.Progress{Request: request}
	r := &termview.Renderer{Out: stdout, Terminal: isTerminal(stdout)}
	r.Width, r.Height = termSize(stdout)
	err := cf.client().Watch(ctx, "/v1/requests/"+url.PathEscape(request)+"/watch", func(ev client.Event) bool {
		if cf.json {
			fmt.Fprintln(stdout, string(ev.Raw))
		}
		if p.Apply(ev) && !cf.json {
			r.Draw(p)
		}
		return !p.Finished
	})
	if !p.Finished {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "\nStopped watching; request %s goes on. Follow it: drove watch %s   Stop it: drove cancel %s\n", request, request, request)
			return exitOK
		}
		if err == nil {
			err = client.ErrStreamEnded
		}
		fmt.Fprintf(stderr, "drove: %v\n", err)
		return exitError
	}
	if !cf.json {
		p.Summary(stdout)
	}
	if p.Rejected != "" {
		return exitError
	}
	if len(p.Failed) > 0 {
		return exitNotMoved
	}
	return exitOK
}

func runWatch(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("watch", `
Usage: drove watch REQUEST
       drove watch --instance NAME

Follows a request's progress (its history first, then live) until it
finishes, or prints an instance's events as they come.`, stderr)
	var cf clientFlags
	cf.register(fs)
	inst := fs.String("instance", "", "follow an instance instead of a request")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	ctx := context.Background()
	if *inst != "" {
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
		err := cf.client().Watch(ctx, "/v1/instances/"+url.PathEscape(*inst)+"/watch", func(ev client.Event) bool {
			if cf.json {
				fmt.Fprintln(stdout, string(ev.Raw))
			} else {
				fmt.Fprintf(stdout, "%s %-22s %s %s\n", ev.Time.Format("15:04:05.000"), ev.Type, ev.Request, compact(ev.Payload))
			}
			return true
		})
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(stderr, "drove: %v\n", err)
			return exitError
		}
		return exitOK
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	return watchRequest(ctx, cf, pos[0], stdout, stderr)
}

func compact(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 160 {
		s = s[:159] + "…"
	}
	return s
}

func runApprove(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("approve", `
Usage: drove approve REQUEST

Lets a reviewed dry-run plan run. If the cluster changed since the plan was
made, the plan is refreshed first. Then shows live progress.`, stderr)
	var cf clientFlags
	cf.register(fs)
	noWatch := fs.Bool("no-watch", false, "return at once")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	ctx := context.Background()
	if err := cf.client().Approve(ctx, pos[0]); err != nil {
		fmt.Fprintf(stderr, "drove: %v\n", err)
		return exitError
	}
	if *noWatch {
		fmt.Fprintf(stdout, "Request %s approved.\n", pos[0])
		return exitOK
	}
	return watchRequest(ctx, cf, pos[0], stdout, stderr)
}

func runCancel(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("cancel", `
Usage: drove cancel REQUEST

Stops a request: jobs not yet started are cancelled at once, running moves
abort cleanly and leave their instance where it was; nothing is re-queued.`, stderr)
	var cf clientFlags
	cf.register(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	if err := cf.client().Cancel(context.Background(), pos[0]); err != nil {
		fmt.Fprintf(stderr, "drove: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "Request %s is being cancelled. Follow it: drove watch %s\n", pos[0], pos[0])
	return exitOK
}

func runPlans(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("plans", `
Usage: drove plans [REQUEST]

Lists requests with their status, or prints one request's plan.`, stderr)
	var cf clientFlags
	cf.register(fs)
	status := fs.String("status", "", "only requests in this status (planning, awaiting-approval, running, cancelling, finished, rejected)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	ctx := context.Background()
	c := cf.client()
	if len(pos) == 1 {
		var plan json.RawMessage
		if err := c.Get(ctx, "/v1/requests/"+url.PathEscape(pos[0])+"/plan", &plan); err != nil {
			fmt.Fprintf(stderr, "drove: %v\n", err)
			return exitError
		}
		if cf.json {
			return printJSON(stdout, plan)
		}
		printPlan(stdout, pos[0], plan)
		return exitOK
	}
	path := "/v1/requests"
	if *status != "" {
		path += "?status=" + url.QueryEscape(*status)
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := c.Get(ctx, path, &list); err != nil {
		fmt.Fprintf(stderr, "drove: %v\n", err)
		return exitError
	}
	if cf.json {
		return printJSON(stdout, list)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REQUEST\tKIND\tSTATUS\tNODES/INSTANCES\tREQUESTED BY\tREQUESTED AT")
	for _, r := range list.Items {
		what := joinAny(r["nodes"])
		if what == "" {
			what = joinAny(r["instances"])
		}
		fmt.Fprintf(tw, "%v\t%v\t%v\t%s\t%v\t%v\n", r["id"], r["kind"], r["status"], trunc(what, 40), r["actor"], r["requested_at"])
	}
	tw.Flush()
	return exitOK
}

func joinAny(v any) string {
	xs, _ := v.([]any)
	var out []string
	for _, x := range xs {
		out = append(out, fmt.Sprint(x))
	}
	return strings.Join(out, ",")
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func printJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return exitError
	}
	return exitOK
}

// printPlan shows a plan for review: what moves where, in which jobs, in
// what order, and what cannot move and why.
func printPlan(w io.Writer, request string, raw json.RawMessage) {
	var p wire.Plan
	if err := json.Unmarshal(raw, &p); err != nil {
		fmt.Fprintf(w, "%s\n", raw)
		return
	}
	fmt.Fprintf(w, "Plan for request %s: %d to move, %d cannot move; cluster score %.4f → %.4f (lower is better)\n",
		request, len(p.Moved), len(p.Failed), p.ScoreBefore, p.ScoreAfter)
	down := map[[2]int]wire.MoveDowntime{}
	for _, m := range p.Moves {
		down[[2]int{m.Job, m.Index}] = m
	}
	for i, j := range p.Jobs {
		var steps []string
		inst := ""
		for k, op := range j.Opcodes {
			inst = op.Instance
			to := op.To
			if to == "" {
				to = op.TargetNode + op.RemoteNode
			}
			name := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(string(op.OpID), "OP_INSTANCE_"), "_", "-"))
			step := name + " → " + to
			if m, ok := down[[2]int{j.Index, k}]; ok {
				step += fmt.Sprintf(" (%d ms down)", m.PredictedDowntimeMS)
			}
			steps = append(steps, step)
		}
		fmt.Fprintf(w, "  job %-3d %-20s %s\n", j.Index, inst, strings.Join(steps, ", "))
		for _, d := range j.Depends {
			st := "any end"
			if len(d.Statuses) > 0 {
				var names []string
				for _, s := range d.Statuses {
					names = append(names, string(s))
				}
				st = strings.Join(names, "/")
			}
			fmt.Fprintf(w, "          waits for job %d (%s)\n", i+d.Job, st)
		}
	}
	printLongestDowntime(w, p.Moves)
	if len(p.Failed) > 0 {
		fmt.Fprintln(w, "Cannot move:")
		for _, f := range p.Failed {
			fmt.Fprintf(w, "  %-20s %s\n", f.Instance, f.Reason)
		}
	}
}

// printLongestDowntime says how a dry run's downtimes were predicted,
// by the move predicted longest, in the estimate's words.
func printLongestDowntime(w io.Writer, moves []wire.MoveDowntime) {
	if len(moves) == 0 {
		return
	}
	longest := moves[0]
	for _, m := range moves[1:] {
		if m.PredictedDowntimeMS > longest.PredictedDowntimeMS {
			longest = m
		}
	}
	fmt.Fprintf(w, "Downtime predicted per move from earlier moves' measurements, as 'drove migrate --estimate' predicts it (--json shows how for each).\n"+
		"Longest: %d ms, %s in job %d (%s).\n", longest.PredictedDowntimeMS, longest.Instance, longest.Job, longest.How)
}

// termSize is the terminal's columns and rows; 0, 0 when w is not one.
func termSize(w io.Writer) (cols, rows int) {
	f, ok := w.(*os.File)
	if !ok {
		return 0, 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return int(ws.Col), int(ws.Row)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
