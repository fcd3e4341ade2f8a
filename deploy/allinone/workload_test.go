package allinone_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
)

// A workload stopped between the truncation of "pos" and its write (one
// stop in ten on a loaded machine) left it empty, and the next start died
// at once on it: the workload starts the ring over instead and writes.
func TestWorkloadStartsOverOnAnEmptyPos(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pos"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	argv := allinone.Workload{Block: 4096, Blocks: 8, Interval: 10 * time.Millisecond}.Command()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "DROVE_DATA="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	deadline := time.After(time.Minute)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "pos"))
		if p := strings.TrimSpace(string(b)); p != "" && p != "0" {
			return // it wrote a block and moved on
		}
		select {
		case <-exited:
			t.Fatalf("the workload exited on an empty pos: %v", waitErr)
		case <-deadline:
			t.Fatal("the workload wrote nothing in a minute")
		case <-time.After(10 * time.Millisecond): // polling the file it writes, under a deadline
		}
	}
}
