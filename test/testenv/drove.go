package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Drove returns the path of a `drove` binary built from this tree, for
// tests that run Drove as separate programs: DROVE_BIN if set (make test
// builds one for the whole run: each build links for seconds of CPU, and
// seven packages need it), otherwise one built at the first call in this
// test binary and shared by its tests, removed by [Shutdown].
func Drove(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("DROVE_BIN"); bin != "" {
		if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			t.Fatalf("testenv.Drove: DROVE_BIN=%q is not an executable file (%v): unset it to build one", bin, err)
		}
		return bin
	}
	droveMu.Lock()
	defer droveMu.Unlock()
	if droveBin == "" {
		bin, err := buildDrove()
		if err != nil {
			t.Fatalf("testenv.Drove: %v", err)
		}
		droveBin = bin
	}
	return droveBin
}

var (
	droveMu  sync.Mutex
	droveBin string // built by Drove, removed by Shutdown
)

func buildDrove() (string, error) {
	dir, err := os.MkdirTemp("", "drove-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "drove")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/drovehq/drove/cmd/drove").CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("go build ./cmd/drove: %w\n%s", err, out)
	}
	return bin, nil
}

// removeDrove removes the binary Drove built, if it built one.
func removeDrove() error {
	droveMu.Lock()
	defer droveMu.Unlock()
	bin := droveBin
	droveBin = ""
	if bin == "" {
		return nil
	}
	return os.RemoveAll(filepath.Dir(bin))
}
