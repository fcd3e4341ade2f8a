package hailsuite

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"github.com/drovehq/drove/test/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The files of Ganeti's shell tests that run hail, and how many of their
// checks do: the issue (29) counts 59, which is what the real hail 3.0
// passes. A suite with another count is another suite: the test says so
// rather than pass on fewer checks.
var (
	suiteFiles = []string{"htools-hail.test", "htools-basic.test", "htools-invalid.test", "htools-no-backend.test"}
	hailChecks = 59
)

// TestGanetiHailShellTests runs every hail check of Ganeti's shell tests
// against `drove iallocator`. The other tools' checks in the same files
// (hbal, hspace, ...) run too, as shelltest runs whole files, and fail at
// once with no such program; only hail's are counted.
func TestGanetiHailShellTests(t *testing.T) {
	suite := suiteDir(t)
	shelltest := lookTool(t, "DROVE_SHELLTEST", "shelltest", "Debian's shelltestrunner")
	hspace := lookTool(t, "DROVE_HSPACE", "hspace", "Debian's ganeti-htools")

	dir := t.TempDir()
	drove := testenv.Drove(t)
	// Ganeti's checks call ./test/hs/hail from the top of a source tree
	// and read $TESTDATA_DIR as ./test/data/htools (cli-tests-defs.sh).
	hs := filepath.Join(dir, "test", "hs")
	must(t, os.MkdirAll(hs, 0o755))
	must(t, os.Symlink(filepath.Join(suite, "hs", "shelltests"), filepath.Join(hs, "shelltests")))
	must(t, os.Symlink(filepath.Join(suite, "data"), filepath.Join(dir, "test", "data")))
	wrapper := fmt.Sprintf("#!/bin/sh\nexec %q iallocator \"$@\"\n", drove)
	must(t, os.WriteFile(filepath.Join(hs, "hail"), []byte(wrapper), 0o755))
	fixtures := filepath.Join(dir, "T")
	must(t, os.Mkdir(fixtures, 0o755))
	env := append(os.Environ(), "T="+fixtures, "TESTDATA_DIR=./test/data/htools", "HSPACE="+hspace)

	script, err := filepath.Abs("fixtures.sh")
	must(t, err)
	build := exec.Command("bash", script)
	build.Dir, build.Env = dir, env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the $T fixtures: %v\n%s", err, out)
	}

	checks := map[string]string{} // shelltest's name of a hail check → its command
	args := []string{"--xmlout=" + filepath.Join(dir, "results.xml")}
	for _, f := range suiteFiles {
		rel := "test/hs/shelltests/" + f
		for n, cmd := range hailCommands(t, filepath.Join(suite, "hs", "shelltests", f)) {
			checks[fmt.Sprintf(":%s:%d", rel, n)] = cmd
		}
		args = append(args, rel)
	}
	if len(checks) != hailChecks {
		t.Fatalf("found %d hail checks in %v, want %d: is this Ganeti 3.0's suite?", len(checks), suiteFiles, hailChecks)
	}
	run := exec.Command(shelltest, args...)
	run.Dir, run.Env = dir, env
	out, _ := run.CombinedOutput() // other tools' checks fail: the results file says which passed
	results := readResults(t, filepath.Join(dir, "results.xml"), out)

	var failed []string
	perFile := map[string][2]int{}
	for name, cmd := range checks {
		file := strings.Split(name, ":")[1]
		c := perFile[file]
		c[1]++
		r, ok := results[name]
		switch {
		case !ok:
			failed = append(failed, fmt.Sprintf("%s (not run): %s", name, cmd))
		case r != "":
			failed = append(failed, fmt.Sprintf("%s: %s", name, r))
		default:
			c[0]++
		}
		perFile[file] = c
	}
	for file, c := range perFile {
		t.Logf("%s: %d/%d hail checks pass", filepath.Base(file), c[0], c[1])
	}
	if len(failed) > 0 {
		slices.Sort(failed)
		t.Errorf("%d of %d hail checks fail:\n%s", len(failed), len(checks), strings.Join(failed, "\n\n"))
	}
}

// suiteDir is the test directory of Debian's ganeti-testsuite, which
// test/tools/deps.sh unpacks into .cache/ganeti.
func suiteDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("DROVE_GANETI_SUITE")
	if dir == "" {
		root, err := filepath.Abs(filepath.Join("..", ".."))
		must(t, err)
		dir = filepath.Join(root, ".cache", "ganeti", "usr", "share", "ganeti", "testsuite", "test")
	}
	if _, err := os.Stat(filepath.Join(dir, "hs", "shelltests", "htools-hail.test")); err != nil {
		t.Fatalf("Ganeti's shell tests are missing (%v): run `make test-deps` or set DROVE_GANETI_SUITE", err)
	}
	return dir
}

func lookTool(t *testing.T, env, name, from string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		name = p
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is missing (%v): run `make test-deps` (installs %s) or set %s", name, err, from, env)
	}
	return p
}

// hailCommands reads a shelltest file of the first format (command, then
// optional <<< input, >>> stdout, >>>2 stderr, and >>>= exit status, which
// ends each test) and returns the commands that run hail, by the number
// shelltest gives each test in the file (from 1).
func hailCommands(t *testing.T, path string) map[int]string {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	out := map[int]string{}
	n, inTest, inBlock := 0, false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, ">>>=") || strings.HasPrefix(line, ">>>") || strings.HasPrefix(line, "<<<"):
			// A delimiter alone on its line opens a block of text.
			inBlock = trimmed == "<<<" || trimmed == ">>>" || trimmed == ">>>2"
			if strings.HasPrefix(line, ">>>=") {
				inTest, inBlock = false, false
			}
		case inBlock || trimmed == "" || strings.HasPrefix(line, "#"):
		case !inTest:
			n, inTest = n+1, true
			if strings.Contains(line, "./test/hs/hail") {
				out[n] = line
			}
		}
	}
	must(t, sc.Err())
	return out
}

// readResults reads shelltest's JUnit file: each test's name and, when it
// failed, shelltest's account of the failure ("" when it passed).
func readResults(t *testing.T, path string, log []byte) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("shelltest wrote no results (%v):\n%s", err, log)
	}
	var suite struct {
		Cases []struct {
			Name    string  `xml:"name,attr"`
			Failure *string `xml:"failure"`
			Error   *string `xml:"error"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(data, &suite); err != nil {
		t.Fatalf("shelltest's results: %v", err)
	}
	out := map[string]string{}
	for _, c := range suite.Cases {
		switch {
		case c.Failure != nil:
			out[c.Name] = "failed\n" + *c.Failure
		case c.Error != nil:
			out[c.Name] = "error\n" + *c.Error
		default:
			out[c.Name] = ""
		}
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
