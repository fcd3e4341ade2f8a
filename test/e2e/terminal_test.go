package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMigrateWatchInATerminal drives `drove migrate` in a real terminal
// (tmux): it asks for confirmation, then --watch draws the steps with
// their check marks and ends with the outcome.
func TestMigrateWatchInATerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is missing: run test/tools/deps.sh (make test-deps)")
	}
	e := start(t)
	in := e.movable(1)[0]
	dir := t.TempDir()
	bin := filepath.Join(dir, "drove")
	build := exec.Command("go", "build", "-o", bin, "github.com/drovehq/drove/cmd/drove")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// A private tmux server, so nothing else's sessions are touched.
	socket := fmt.Sprintf("drove-e2e-%d", os.Getpid())
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-u", "-L", socket}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tmux("new-session", "-d", "-s", "m", "-x", "160", "-y", "50", "env", "LANG=C.UTF-8", "PS1=$ ", "bash", "--norc", "--noprofile")
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })

	screen := func() string { return tmux("capture-pane", "-p", "-t", "m", "-S", "-100") }
	await := func(what string, within time.Duration, ok func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			s := screen()
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out after %s waiting for %s; the terminal shows:\n%s", within, what, s)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	cmd := fmt.Sprintf("DROVE_GATEWAY=%s %s migrate %s --automatic --watch", e.api.Base, bin, in.Name)
	tmux("send-keys", "-t", "m", cmd, "Enter")
	s := await("the confirmation prompt", 30*time.Second, func(s string) bool { return strings.Contains(s, "Do you wish to continue y/N?") })
	if !strings.Contains(s, "This will migrate instance "+in.Name) || !strings.Contains(s, "approximately") {
		t.Fatalf("the prompt does not say what will happen with an estimate:\n%s", s)
	}
	tmux("send-keys", "-t", "m", "y", "Enter")
	s = await("the outcome", 2*time.Minute, func(s string) bool { return strings.Contains(s, "Migration was successful") })
	for _, want := range []string{"Migration progress (", "✓ making a reservation (", "✓ synchronizing filesystems (", "✓ switching instance ("} {
		if !strings.Contains(s, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, s)
		}
	}
	t.Logf("the terminal shows:\n%s", strings.TrimSpace(s))
	if strings.Contains(s, "☐") {
		t.Errorf("a running step was left on screen after the migration ended:\n%s", s)
	}
}
