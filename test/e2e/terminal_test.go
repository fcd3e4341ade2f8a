package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/executor/sim"
	"github.com/drovehq/drove/test/testenv"
)

// TestMigrateWatchInATerminal drives `drove migrate` in a real terminal
// (tmux): it asks for confirmation, then --watch draws the steps with
// their check marks, bars and durations in one table redrawn in place, and
// ends with the outcome; with no migration, --watch says how to start one.
func TestMigrateWatchInATerminal(t *testing.T) {
	t.Parallel()
	e := start(t)
	in := e.movable(1)[0]
	bin, tm := terminal(t)
	await := tm.await

	// Before any migration, --watch says there is none and how to start one.
	none := exec.Command(bin, "migrate", in.Name, "--watch")
	none.Env = append(os.Environ(), "DROVE_GATEWAY="+e.api.Base)
	out, err := none.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "has no migration to watch") || !strings.Contains(string(out), "drove migrate "+in.Name+" --watch") {
		t.Errorf("drove migrate %s --watch with no migration: %v\n%s", in.Name, err, out)
	}
	cmd := fmt.Sprintf("DROVE_GATEWAY=%s %s migrate %s --automatic --watch", e.api.Base, bin, in.Name)
	tm.tmux("send-keys", "-t", "m", cmd, "Enter")
	s := await("the confirmation prompt", 30*time.Second, func(s string) bool { return strings.Contains(s, "Do you wish to continue y/N?") })
	if !strings.Contains(s, "This will migrate instance "+in.Name) || !strings.Contains(s, "approximately") {
		t.Fatalf("the prompt does not say what will happen with an estimate:\n%s", s)
	}
	tm.tmux("send-keys", "-t", "m", "y", "Enter")
	s = await("the outcome", 2*time.Minute, func(s string) bool { return strings.Contains(s, "Migration was successful") })
	for _, want := range []string{"Migration progress (", "✓  making a reservation", "✓  synchronizing filesystems", "✓  switching instance", "total"} {
		if !strings.Contains(s, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "STEP"); n != 1 {
		t.Errorf("the steps' table was drawn %d times, not redrawn in place:\n%s", n, s)
	}
	t.Logf("the terminal shows:\n%s", strings.TrimSpace(s))
	if strings.Contains(s, "☐") {
		t.Errorf("a running step was left on screen after the migration ended:\n%s", s)
	}
}

// TestEvacuateInATerminal drives `drove evacuate` in a real terminal
// (tmux): the jobs are one table redrawn in place, with progress bars,
// bytes and a total row, and the command ends with the request's summary.
func TestEvacuateInATerminal(t *testing.T) {
	t.Parallel()
	e := startWith(t, func(c *allinone.Config) {
		c.Sim.Clock = sim.FastClock(2) // long enough to catch it running
	}, "")
	bin, tm := terminal(t)
	node := e.sys.Nodes[0]
	cmd := fmt.Sprintf("DROVE_GATEWAY=%s %s evacuate %s --mode all", e.api.Base, bin, node)
	tm.tmux("send-keys", "-t", "m", cmd, "Enter")
	// While it runs: one table with a total row and progress bars.
	s := tm.await("a job under way", 2*time.Minute, func(s string) bool {
		return strings.Contains(s, "running") && strings.Contains(s, "█") && strings.Contains(s, "/s")
	})
	t.Logf("while running, the terminal shows:\n%s", strings.TrimSpace(s))
	s = tm.await("the summary", 3*time.Minute, func(s string) bool { return strings.Contains(s, " finished in ") })
	t.Logf("at the end, the terminal shows:\n%s", strings.TrimSpace(s))
	whole := tm.tmux("capture-pane", "-p", "-t", "m", "-S", "-", "-E", "-") // the scrollback too
	if n := strings.Count(whole, "INSTANCE"); n != 1 {
		t.Errorf("the jobs' table header appears %d times in the terminal and its scrollback: not redrawn in place:\n%s", n, whole)
	}
	if n := strings.Count(whole, "\nall "); n != 1 {
		t.Errorf("the total row appears %d times: not redrawn in place:\n%s", n, whole)
	}
	if strings.Contains(whole, "op 1/0") {
		t.Errorf("a job row counts no opcodes:\n%s", whole)
	}
	for _, want := range []string{"finished", "100.0%", "jobs done"} {
		if !strings.Contains(s, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, s)
		}
	}
	// The summary is the request's: it names every instance the API says moved.
	var req struct {
		ID      string `json:"id"`
		Outcome struct {
			Moved []struct {
				Instance string `json:"instance"`
			} `json:"moved"`
		} `json:"outcome"`
	}
	id := requestOnScreen(t, s)
	if err := e.api.Get(context.Background(), "/v1/requests/"+id, &req); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, "Request "+id+" finished in ") {
		t.Errorf("the summary does not name request %s:\n%s", id, s)
	}
	for _, m := range req.Outcome.Moved {
		if !strings.Contains(whole, "✓ "+m.Instance) {
			t.Errorf("the summary lacks moved instance %s:\n%s", m.Instance, whole)
		}
	}
}

// requestOnScreen is the request id of "Request ID (Ctrl-C ...".
func requestOnScreen(t *testing.T, s string) string {
	t.Helper()
	for _, l := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "Request "); ok {
			if id, _, ok := strings.Cut(rest, " "); ok {
				return id
			}
		}
	}
	t.Fatalf("no request id on the screen:\n%s", s)
	return ""
}

// tmuxTerm is a private tmux server with one 160×50 window running bash.
type tmuxTerm struct {
	tmux   func(args ...string) string
	screen func() string
	await  func(what string, within time.Duration, ok func(string) bool) string
}

// terminal builds the drove binary and starts a private tmux server (so
// nothing else's sessions are touched).
func terminal(t *testing.T) (bin string, tm tmuxTerm) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is missing: run test/tools/deps.sh (make test-deps)")
	}
	bin = testenv.Drove(t)
	socket := fmt.Sprintf("drove-e2e-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
	tm.tmux = func(args ...string) string {
		t.Helper()
		// Bounded: a tmux that hangs (seen once, started without a
		// terminal) fails the test with its arguments, not the run.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "tmux", append([]string{"-u", "-L", socket}, args...)...)
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tm.tmux("new-session", "-d", "-s", "m", "-x", "160", "-y", "50", "env", "LANG=C.UTF-8", "PS1=$ ", "bash", "--norc", "--noprofile")
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	tm.screen = func() string { return tm.tmux("capture-pane", "-p", "-t", "m", "-S", "-100") }
	tm.await = func(what string, within time.Duration, ok func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			s := tm.screen()
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out after %s waiting for %s; the terminal shows:\n%s", within, what, s)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return bin, tm
}
