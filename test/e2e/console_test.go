package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor/sim"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
)

// browser is a headless Chromium on the console, recording every script
// error the pages raise.
type browser struct {
	t      *testing.T
	ctx    context.Context
	base   string
	out    string
	mu     sync.Mutex
	errors []string
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	exe, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is missing: run test/tools/deps.sh (make test-deps)")
	}
	// Chromium leaves its singleton directories (org.chromium.Chromium.*)
	// in TMPDIR when it is killed: give it one that goes with the test.
	tmp, err := os.MkdirTemp("", "drove-console-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // tests run as root
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 1000),
		chromedp.Env("TMPDIR="+tmp),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser to exit
		if err := os.RemoveAll(tmp); err != nil {
			t.Logf("Chromium's temporary directory: %v", err)
		}
	})
	out := os.Getenv("TEST_OUTPUT_DIR")
	if out == "" {
		out = t.ArtifactDir()
	}
	b := &browser{t: t, ctx: ctx, base: base, out: out}
	// Start the browser with no timeout on this first call (a timeout
	// would stop the whole browser), then listen to its console.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return // the browser or the test is done
			}
			// Exceptions, console.error and the browser's own errors
			// (a refused script or style, a blocked inline one) count;
			// a failed fetch is the page's to show.
			if m.Type == chromedp.ConsoleException || m.Type == chromedp.ConsoleError && m.Source != "network" {
				b.scriptError(m.String() + " at " + m.URL + ":" + fmt.Sprint(m.Line))
			}
		}
	}()
	return b
}

func (b *browser) scriptError(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errors = append(b.errors, s)
}

// run performs actions within d, failing the test with what on error.
func (b *browser) run(what string, d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v (script errors: %v)", what, err, b.scriptErrors())
	}
}

func (b *browser) scriptErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// eval evaluates a JavaScript expression on the page.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v (script errors: %v)", expr, err, b.scriptErrors())
	}
	return v
}

// await polls a JavaScript condition until it is true or d passes.
func (b *browser) await(what string, d time.Duration, cond string) {
	b.t.Helper()
	deadline := time.Now().Add(d)
	for !eval[bool](b, cond) {
		if time.Now().After(deadline) {
			text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText`))
			b.t.Fatalf("timed out after %s waiting for %s; the page shows:\n%s", d, what, text)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// shoot saves a screenshot of the page as name in the output directory.
func (b *browser) shoot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.out, name)
	if err := os.MkdirAll(b.out, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

// noBannerError fails the test if the page shows an error banner.
func (b *browser) noBannerError(where string) {
	b.t.Helper()
	msg := eval[string](b, `(() => { const e = document.getElementById("banner"); return e.hidden || e.className === "info" ? "" : e.textContent; })()`)
	if msg != "" {
		b.t.Errorf("%s: the page shows an error: %s", where, msg)
	}
}

// TestConsoleEvacuatesAndMigrates opens the web console on the whole system
// with the demo cluster: the cluster view shows every node the API lists;
// a dry-run evacuation from the page shows the API's plan; approved from
// the page, it runs with live progress to the end the API reports; and a
// migration started from an instance's page shows its steps to success.
// Screenshots of each view go to the test's output directory, and any
// script error on any page fails the test.
func TestConsoleEvacuatesAndMigrates(t *testing.T) {
	t.Parallel()
	e := startWith(t, func(c *allinone.Config) {
		c.Sim.Clock = sim.FastClock(2) // slow enough to see a request running
	}, "")
	b := newBrowser(t, e.api.Base)
	node := clusterPage(t, e, b)
	id := evacuateFromThePage(t, e, b, node)
	mid := migrateFromThePage(t, e, b)
	otherPages(t, e, b, node, id, mid)
	cancelFromThePage(t, e, b, e.sys.Nodes[len(e.sys.Nodes)-1])
	if errs := b.scriptErrors(); len(errs) > 0 {
		t.Fatalf("the pages raised script errors:\n%s", strings.Join(errs, "\n"))
	}
}

// clusterPage checks the cluster view against the API and returns the
// node with the most primaries, to evacuate.
func clusterPage(t *testing.T, e *env, b *browser) string {
	t.Helper()
	ctx := context.Background()
	b.run("open the cluster", 60*time.Second, chromedp.Navigate(e.api.Base+"/console/"))
	b.await("the nodes", 60*time.Second, `document.querySelectorAll("tr[data-node]").length > 0`)
	var nodes struct {
		Items []struct {
			Name             string `json:"name"`
			PrimaryInstances int    `json:"primary_instances"`
		} `json:"items"`
	}
	if err := e.api.Get(ctx, "/v1/nodes?limit=1000", &nodes); err != nil {
		t.Fatal(err)
	}
	if got := eval[int](b, `document.querySelectorAll("tr[data-node]").length`); got != len(nodes.Items) {
		t.Errorf("the cluster view shows %d nodes; the API lists %d", got, len(nodes.Items))
	}
	node := nodes.Items[0].Name
	for _, n := range nodes.Items {
		if n.PrimaryInstances > nodes.Items[0].PrimaryInstances {
			node = n.Name
		}
	}
	b.noBannerError("cluster")
	b.shoot("cluster.png")
	return node
}

// evacuateFromThePage asks for a dry run from the page, reviews it
// against the API's plan, approves it there and watches it to its end;
// it returns the request's id.
func evacuateFromThePage(t *testing.T, e *env, b *browser, node string) string {
	t.Helper()
	ctx := context.Background()
	b.run("ask for a dry run", 60*time.Second,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`button[data-evacuate=%q]`, node))),
		chromedp.WaitVisible(chromedp.CSS(`#evac-dryrun`)),
		chromedp.SetValue(chromedp.CSS(`#evac-mode`), "all"),
		chromedp.SetValue(chromedp.CSS(`#evac-reason`), "console acceptance test"),
		chromedp.Click(chromedp.CSS(`#evac-dryrun`)))
	b.await("the plan to review", 90*time.Second, `!!document.getElementById("approve") && !!document.getElementById("job-graph")`)
	id := eval[string](b, `location.pathname.split("/").pop()`)
	plan, err := e.api.Plan(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := eval[int](b, `document.querySelectorAll("#plan-moved tbody tr").length`); got != len(plan.Moved) {
		t.Errorf("the page shows %d instances moved; the API's plan %d", got, len(plan.Moved))
	}
	// A dry run's moves come with their predicted downtimes, one cell per
	// instance moved.
	if len(plan.Moves) == 0 {
		t.Error("the API's dry-run plan predicts no move's downtime")
	}
	if got := eval[int](b, `document.querySelectorAll("#plan-moved td[data-downtime]").length`); got != len(plan.Moved) {
		t.Errorf("the page shows %d predicted downtimes; the API's plan moves %d instances", got, len(plan.Moved))
	}
	if got := eval[int](b, `document.querySelectorAll("#job-graph g[data-job]").length`); got != len(plan.Jobs) {
		t.Errorf("the graph draws %d jobs; the plan has %d", got, len(plan.Jobs))
	}
	// Every dependency is an arrow from the job it waits for (Ganeti's
	// relative form: -1 is the job before).
	var want []string
	for _, j := range plan.Jobs {
		for _, d := range j.Depends {
			want = append(want, fmt.Sprintf("%d>%d", j.Index+d.Job, j.Index))
		}
	}
	got := eval[[]string](b, `[...document.querySelectorAll("#job-graph line")].map(l => l.dataset.from + ">" + l.dataset.to)`)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the graph draws the dependencies %v; the plan has %v", got, want)
	}
	if len(plan.Moved) == 0 {
		t.Fatalf("the plan for %s moves nothing", node)
	}
	if st := requestStatus(t, e.api, id); st != "awaiting-approval" {
		t.Fatalf("after the dry run the API says %s, want awaiting-approval", st)
	}
	// The makespan estimate of the plan, if approved now: the page shows
	// the API's expected finish and lower bound.
	var detail struct {
		Estimate *struct {
			ExpectedFinishAt  string  `json:"expected_finish_at"`
			LowerBoundSeconds float64 `json:"lower_bound_seconds"`
		} `json:"estimate"`
	}
	if err := e.api.Get(ctx, "/v1/requests/"+id, &detail); err != nil {
		t.Fatal(err)
	}
	if detail.Estimate == nil || detail.Estimate.ExpectedFinishAt == "" {
		t.Fatalf("the dry run's detail has no estimate: %+v", detail.Estimate)
	}
	b.await("the estimate", 30*time.Second, `!!document.querySelector('[data-estimate=expected_finish_at]') && !!document.querySelector('[data-estimate=lower_bound_seconds]')`)
	if got := eval[string](b, `document.querySelector('[data-estimate=expected_finish_at]').textContent`); !strings.Contains(got, "to send") {
		t.Errorf("the page's expected finish says %q", got)
	}

	// Approved from the page; watched while it runs, then to its end.
	b.run("approve", 30*time.Second, chromedp.Click(chromedp.CSS(`#approve`)))
	b.await("a job running", 2*time.Minute, `document.querySelectorAll("tr.job-row[data-state=running]").length > 0 || document.getElementById("req-status").textContent === "finished"`)
	b.shoot("request.png")
	b.await("the request to finish", 4*time.Minute, `document.getElementById("req-status").textContent === "finished"`)
	var req struct {
		Status string `json:"status"`
		Jobs   []struct {
			State string `json:"state"`
		} `json:"jobs"`
	}
	if err := e.api.Get(ctx, "/v1/requests/"+id, &req); err != nil {
		t.Fatal(err)
	}
	success := 0
	for _, j := range req.Jobs {
		if j.State == "success" {
			success++
		}
	}
	b.await("every job's row to show its end", time.Minute,
		fmt.Sprintf(`document.querySelectorAll("tr.job-row[data-state=success]").length === %d`, success))
	if req.Status != "finished" {
		t.Errorf("the page says finished, the API %s", req.Status)
	}
	// The rows are the gateway's fold (gateway/progress): one per job, each
	// with its instance, a finished one at 100%.
	if got := eval[float64](b, `document.querySelectorAll("tr.job-row").length`); int(got) != len(req.Jobs) {
		t.Errorf("the page shows %v job rows, the request has %d jobs", got, len(req.Jobs))
	}
	if got := eval[string](b, `[...document.querySelectorAll("tr.job-row")].filter(r => r.cells[1].textContent === "" ||
		(r.dataset.state === "success" && r.cells[4].textContent !== "100.0%")).map(r => r.dataset.job).join(",")`); got != "" {
		t.Errorf("job rows without their instance, or done and not at 100%%: %s", got)
	}
	if got := eval[string](b, `document.getElementById("req-pct").textContent`); got != "100.0%" {
		t.Errorf("the total row shows %s at the end", got)
	}
	b.noBannerError("request")
	return id
}

// migrateFromThePage starts a migration from an instance's page and
// watches its steps to success; it returns the migration's id.
func migrateFromThePage(t *testing.T, e *env, b *browser) string {
	t.Helper()
	ctx := context.Background()
	in := e.movable(1)[0]
	b.run("open the instance", 60*time.Second, chromedp.Navigate(e.api.Base+"/console/instances/"+in.Name))
	b.await("the migrate button", 60*time.Second, `!!document.getElementById("migrate")`)
	b.run("migrate", 30*time.Second, chromedp.Click(chromedp.CSS(`#migrate`)))
	b.await("the migration's page", 60*time.Second, `location.pathname.startsWith("/console/migrations/")`)
	mid := eval[string](b, `decodeURIComponent(location.pathname.split("/").pop())`)
	b.await("a sync step", 2*time.Minute, `document.querySelectorAll("tr.step[data-phase=sync]").length > 0 || (document.getElementById("mig-state") || {}).textContent === "successful"`)
	b.shoot("migration.png")
	b.await("the migration to succeed", 4*time.Minute, `(document.getElementById("mig-state") || {}).textContent === "successful"`)
	m, err := e.api.Migration(ctx, mid)
	if err != nil {
		t.Fatal(err)
	}
	if m.State != "successful" {
		t.Errorf("the page says successful, the API %s", m.State)
	}
	b.await("every step checked", time.Minute, `[...document.querySelectorAll("tr.step")].every(r => r.dataset.state === "successful")`)
	if got := eval[int](b, `document.querySelectorAll("tr.step[data-phase=sync]").length`); got != m.Syncs {
		t.Errorf("the page shows %d sync steps; the API counts %d", got, m.Syncs)
	}
	// The steps are the gateway's fold (?rows=steps), drawn: each with
	// its label (not the bare phase), checked, at 100%.
	if n := eval[int](b, `document.querySelectorAll("tr.step").length`); n < 2 {
		t.Errorf("the page shows %d steps; a migration has a reservation and a switch at least", n)
	}
	if bad := eval[[]string](b, `[...document.querySelectorAll("tr.step")].filter(r => { const c = r.cells;
		return c[0].textContent !== "✓" || c[3].textContent !== "100%" || !c[1].textContent || c[1].textContent === r.dataset.phase }).map(r => r.outerHTML)`); len(bad) > 0 {
		t.Errorf("steps not drawn as folded (label, ✓, 100%%): %v", bad)
	}
	checkReportedStatuses(t, e, b, m)
	checkDowntimeShown(t, b, m)
	b.noBannerError("migration")
	b.shoot("migration-done.png")
	return mid
}

// checkDowntimeShown: the page shows the switch's downtime, predicted
// and measured, as the API's record has them.
func checkDowntimeShown(t *testing.T, b *browser, m *wire.InstanceMigration) {
	t.Helper()
	if m.PredictedDowntimeMS == 0 {
		t.Errorf("migration %s has no predicted downtime", m.ID)
	}
	var want []string
	for _, f := range []struct {
		ms   int64
		text string
	}{{m.DowntimeMS, " ms measured by Drove"}, {m.PredictedDowntimeMS, " ms predicted"}} {
		if f.ms > 0 {
			want = append(want, fmt.Sprint(f.ms)+f.text)
		}
	}
	js, _ := json.Marshal(want)
	b.await("the downtime, predicted and measured", time.Minute, fmt.Sprintf(
		`%s.every(w => (document.getElementById("mig-downtime") || {textContent: ""}).textContent.includes(w))`, js))
}

// checkReportedStatuses: the page's source and target say what each node
// last reported in the migration's history, when it reported anything.
func checkReportedStatuses(t *testing.T, e *env, b *browser, m *wire.InstanceMigration) {
	t.Helper()
	last := map[string]string{}
	err := e.api.History(context.Background(), "migration", m.ID, 0, func(h wire.HistoryEntry, _ json.RawMessage) error {
		if h.Type != events.TypeMoveStatusReported {
			return nil
		}
		var s events.MoveStatusReported
		if err := json.Unmarshal(h.Payload, &s); err != nil {
			return err
		}
		last[s.Node] = string(s.Status)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("migration %s: the nodes last reported %v", m.ID, last)
	for id, node := range map[string]string{"mig-source": m.Source, "mig-target": m.Target} {
		if want := last[node]; want != "" {
			b.await(id+" to say "+want, time.Minute, fmt.Sprintf(`document.getElementById(%q).textContent.endsWith(%q)`, id, " — "+want))
		}
	}
}

// otherPages opens the console's other pages and checks each against the
// API: the lists name the request and the migration, the settings are the
// API's, the audit trail names who asked, the evacuated node is drained.
func otherPages(t *testing.T, e *env, b *browser, node, request, migration string) {
	t.Helper()
	ctx := context.Background()
	b.visit("/console/requests", fmt.Sprintf(`!!document.querySelector('tr[data-request=%q] .state.finished')`, request))
	b.visit("/console/migrations", fmt.Sprintf(`!!document.querySelector('tr[data-migration=%q] .state.successful')`, migration))
	set, err := e.api.Settings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.visit("/console/settings", `!!document.getElementById("set-max_running_migrations_per_node")`)
	if got := eval[string](b, `document.getElementById("set-max_running_migrations_per_node").value`); got != fmt.Sprint(set.MaxRunningMigrationsPerNode) {
		t.Errorf("the settings page shows %s migrations per node; the API %d", got, set.MaxRunningMigrationsPerNode)
	}
	// A setting changed on the page is the API's.
	want := set.MaxRunningMigrationsPerNode + 1
	b.run("change a setting", 30*time.Second,
		chromedp.SetValue(chromedp.CSS(`#set-max_running_migrations_per_node`), fmt.Sprint(want)),
		chromedp.SetValue(chromedp.CSS(`#set-reason`), "console acceptance test"),
		chromedp.Click(chromedp.CSS(`#save`)))
	b.await("the setting saved", 60*time.Second, `document.getElementById("banner").textContent === "Saved."`)
	if set, err = e.api.Settings(ctx); err != nil || set.MaxRunningMigrationsPerNode != want {
		t.Errorf("after saving %d on the page the API has %+v (%v)", want, set, err)
	}
	b.visit("/console/audit", `(document.getElementById("audit") || {textContent: ""}).textContent.includes("console acceptance test")`)
	b.visit("/console/nodes/"+node, `!!document.getElementById("node-instances")`)
	var n struct {
		Drained bool `json:"drained"`
	}
	var on struct {
		Items []instance `json:"items"`
	}
	if err := e.api.Get(ctx, "/v1/nodes/"+node, &n); err != nil {
		t.Fatal(err)
	}
	if err := e.api.Get(ctx, "/v1/instances?limit=1000&node="+node, &on); err != nil {
		t.Fatal(err)
	}
	if got := eval[int](b, `document.querySelectorAll("tr[data-instance]").length`); got != len(on.Items) {
		t.Errorf("node %s's page lists %d instances; the API %d", node, got, len(on.Items))
	}
	if got := eval[bool](b, `document.getElementById("node-marks").textContent.includes("drained")`); got != n.Drained {
		t.Errorf("node %s's page says drained %v; the API %v", node, got, n.Drained)
	}
	undrainFromThePage(t, e, b, node)
}

// undrainFromThePage: the evacuated node's history shows its drain; the
// page's Undrain waits for the planner service's answer, which the API
// then shows, and the history gains the action.
func undrainFromThePage(t *testing.T, e *env, b *browser, node string) {
	t.Helper()
	b.await("the drain in the node's history", time.Minute,
		`[...document.querySelectorAll("#node-history tr[data-type='node.updated']")].some(tr => tr.textContent.includes("-> online, drained"))`)
	b.run("undrain", 30*time.Second,
		chromedp.SetValue(chromedp.CSS(`#node-reason`), "console acceptance test: disk replaced"),
		chromedp.Click(chromedp.CSS(`#undrain`)))
	b.await("the undrain done", time.Minute, `document.getElementById("banner").textContent === "undrain done."`)
	var n struct {
		Drained bool `json:"drained"`
	}
	if err := e.api.Get(context.Background(), "/v1/nodes/"+node, &n); err != nil || n.Drained {
		t.Errorf("after the page's undrain the API says drained %v (%v)", n.Drained, err)
	}
	b.await("the undrain in the node's history", time.Minute,
		`!!document.querySelector("#node-history tr[data-type='node.action_ended']") && !document.getElementById("node-marks").textContent.includes("drained")`)
	b.shoot("node.png")
}

// cancelFromThePage asks for a dry run from a node's page and cancels it
// from the request's page: every job is cancelled, the request finishes.
func cancelFromThePage(t *testing.T, e *env, b *browser, node string) {
	t.Helper()
	b.visit("/console/nodes/"+node, `!!document.getElementById("node-instances")`)
	b.run("ask for a dry run", 60*time.Second,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`button[data-evacuate=%q]`, node))),
		chromedp.WaitVisible(chromedp.CSS(`#evac-dryrun`)),
		chromedp.Click(chromedp.CSS(`#evac-dryrun`)))
	b.await("the plan to review", 90*time.Second, `!!document.getElementById("cancel") && !!document.getElementById("job-graph")`)
	id := eval[string](b, `location.pathname.split("/").pop()`)
	plan, err := e.api.Plan(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	b.run("cancel", 30*time.Second, chromedp.Click(chromedp.CSS(`#cancel`)))
	b.await("the request to finish", 2*time.Minute, `document.getElementById("req-status").textContent === "finished"`)
	b.await("every job cancelled", time.Minute,
		fmt.Sprintf(`document.querySelectorAll("tr.job-row[data-state=canceled]").length === %d`, len(plan.Jobs)))
	if st := requestStatus(t, e.api, id); st != "finished" {
		t.Errorf("the page says finished, the API %s", st)
	}
	b.noBannerError("cancel")
}

// visit opens a console page and waits until ready holds, without an
// error on the page.
func (b *browser) visit(path, ready string) {
	b.t.Helper()
	b.run("open "+path, 60*time.Second, chromedp.Navigate(b.base+path))
	b.await(path, 60*time.Second, ready)
	b.noBannerError(path)
}

func requestStatus(t *testing.T, api *client.Client, id string) string {
	t.Helper()
	var r struct {
		Status string `json:"status"`
	}
	if err := api.Get(context.Background(), "/v1/requests/"+id, &r); err != nil {
		t.Fatal(err)
	}
	return r.Status
}

// TestConsoleAsksATenantForATokenAndShowsTheirOwn: with tokens configured
// the console asks for one; a tenant who signs in sees only their own
// instances, and not the operators' pages.
func TestConsoleAsksATenantForATokenAndShowsTheirOwn(t *testing.T) {
	t.Parallel()
	e := startWithTokens(t, permTokens, tokOperator)
	b := newBrowser(t, e.api.Base)
	b.run("open the console", 60*time.Second, chromedp.Navigate(e.api.Base+"/console/"))
	b.await("the sign-in form", 60*time.Second, `!!document.getElementById("token")`)
	b.run("sign in as a tenant", 60*time.Second,
		chromedp.SetValue(chromedp.CSS(`#token`), tokOwnerA),
		chromedp.Click(chromedp.CSS(`#login button[type=submit]`)))
	b.await("the tenant's instances", 60*time.Second, `document.querySelectorAll("tr[data-instance]").length > 0`)
	var mine struct {
		Items []ownedInstance `json:"items"`
	}
	if err := e.as(tokOwnerA).Get(context.Background(), "/v1/instances?limit=1000", &mine); err != nil {
		t.Fatal(err)
	}
	if got := eval[int](b, `document.querySelectorAll("tr[data-instance]").length`); got != len(mine.Items) {
		t.Errorf("the tenant's page shows %d instances; the API gives them %d", got, len(mine.Items))
	}
	owners := eval[[]string](b, `[...new Set([...document.querySelectorAll("tr[data-instance] td:nth-child(2)")].map(td => td.textContent))]`)
	if len(owners) != 1 || owners[0] != acctA {
		t.Errorf("the tenant sees instances of %v, want only %s", owners, acctA)
	}
	if eval[bool](b, `!document.querySelector('#nav a[data-nav=cluster]').hidden`) {
		t.Error("the tenant is shown the operators' cluster page")
	}
	b.noBannerError("tenant")
	refusalOnTheAuditPage(t, e, b)
	if errs := b.scriptErrors(); len(errs) > 0 {
		t.Fatalf("the pages raised script errors:\n%s", strings.Join(errs, "\n"))
	}
}

// refusalOnTheAuditPage: the tenant asking for the audit trail is
// refused, and an operator sees that refusal highlighted on the page.
func refusalOnTheAuditPage(t *testing.T, e *env, b *browser) {
	t.Helper()
	ctx := context.Background()
	var trail struct {
		Items []struct {
			Actor   string `json:"actor"`
			Action  string `json:"action"`
			Outcome string `json:"outcome"`
		} `json:"items"`
	}
	if err := e.as(tokOwnerA).Get(ctx, "/v1/audit", &trail); err == nil {
		t.Fatal("a tenant read the audit trail")
	}
	ops := e.as(tokOperator)
	e.waitFor("the refusal in the audit trail", time.Minute, func() bool {
		if err := ops.Get(ctx, "/v1/audit?outcome=denied&actor="+acctA+"&limit=1000", &trail); err != nil {
			t.Fatal(err)
		}
		for _, a := range trail.Items {
			if a.Action == "GET /v1/audit" {
				return true
			}
		}
		return false
	})
	// Signed in as an operator: the console reads its token from the
	// session (core.js).
	eval[bool](b, fmt.Sprintf(`(sessionStorage.setItem("drove-token", %q), true)`, tokOperator))
	b.visit("/console/audit", fmt.Sprintf(`[...document.querySelectorAll("#audit tr.refused")].some(tr => tr.textContent.includes(%q) && tr.textContent.includes("GET /v1/audit"))`, acctA))
	b.shoot("audit.png")
}
