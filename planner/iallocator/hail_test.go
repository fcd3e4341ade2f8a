package iallocator_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/iallocator"
)

// These tests hold Drove against Ganeti itself: the real hail and hbal from
// Debian's ganeti-htools, on Ganeti's public test data from Debian's
// ganeti-testsuite. `make test` installs both (test/tools/deps.sh); they are
// looked up at the paths below or through $DROVE_HAIL, $DROVE_HBAL and
// $DROVE_GANETI_TESTDATA.

func ganetiData(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("DROVE_GANETI_TESTDATA")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), ".cache", "ganeti", "usr", "share", "ganeti", "testsuite", "test", "data", "htools")
	}
	if _, err := os.Stat(filepath.Join(dir, "hail-node-evac.json")); err != nil {
		t.Fatalf("Ganeti's test data is missing (%v): run `make test-deps` or set DROVE_GANETI_TESTDATA", err)
	}
	return dir
}

func tool(t *testing.T, env, path string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		path = p
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is missing (%v): run `make test-deps` (installs Debian's ganeti-htools) or set %s", path, err, env)
	}
	return path
}

func hailPath(t *testing.T) string { return tool(t, "DROVE_HAIL", "/usr/lib/ganeti/iallocators/hail") }
func hbalPath(t *testing.T) string { return tool(t, "DROVE_HBAL", "/usr/bin/hbal") }

func repoRoot(t *testing.T) string {
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

type wireResult struct {
	Success bool            `json:"success"`
	Info    string          `json:"info"`
	Result  json.RawMessage `json:"result"`
}

type evacResult struct {
	Moved  [][3]any
	Failed [][2]string
	Jobs   [][]map[string]any
}

func parseResult(t *testing.T, who string, out []byte) (wireResult, evacResult) {
	t.Helper()
	var w wireResult
	if err := json.Unmarshal(out, &w); err != nil {
		t.Fatalf("%s printed no result (%v): %s", who, err, out)
	}
	var r evacResult
	if w.Success {
		var parts []json.RawMessage
		if err := json.Unmarshal(w.Result, &parts); err != nil || len(parts) != 3 {
			t.Fatalf("%s result is not [moved, failed, jobs]: %s", who, w.Result)
		}
		for i, dst := range []any{&r.Moved, &r.Failed, &r.Jobs} {
			if err := json.Unmarshal(parts[i], dst); err != nil {
				t.Fatalf("%s result part %d: %v", who, i, err)
			}
		}
	}
	return w, r
}

func runHail(t *testing.T, input []byte) []byte {
	t.Helper()
	f := filepath.Join(t.TempDir(), "request.json")
	if err := os.WriteFile(f, input, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(hailPath(t), f).Output()
	if err != nil {
		t.Fatalf("hail: %v", err)
	}
	return out
}

// Ganeti's own node-evacuate and change-group test requests get the same
// answer from Drove as from hail: the same instances moved, to the same
// groups and nodes, in jobs of the same opcodes.
func TestGaneticTestRequestsAnsweredAsHail(t *testing.T) {
	dir := ganetiData(t)
	for _, name := range []string{"hail-node-evac.json", "hail-change-group.json",
		"hail-node-evac.json.excl-stor", "hail-change-group.json.excl-stor",
		"hail-node-evac.json.fail-excl-stor", "hail-change-group.json.fail-excl-stor"} {
		t.Run(name, func(t *testing.T) {
			input := ganetiRequest(t, dir, name)
			hw, hr := parseResult(t, "hail", runHail(t, input))
			out, err := iallocator.Answer(input, planner.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			dw, dr := parseResult(t, "drove", out)
			if hw.Success != dw.Success || fmt.Sprint(hr.Moved) != fmt.Sprint(dr.Moved) || len(hr.Failed) != len(dr.Failed) {
				t.Fatalf("hail: %v %v %v\ndrove: %v %v %v", hw.Success, hr.Moved, hr.Failed, dw.Success, dr.Moved, dr.Failed)
			}
			if len(hr.Jobs) != len(dr.Jobs) {
				t.Fatalf("hail made %d jobs, drove %d", len(hr.Jobs), len(dr.Jobs))
			}
			for j := range hr.Jobs {
				if len(hr.Jobs[j]) != len(dr.Jobs[j]) {
					t.Fatalf("job %d: hail %v, drove %v", j, hr.Jobs[j], dr.Jobs[j])
				}
				for k := range hr.Jobs[j] {
					h, d := hr.Jobs[j][k], dr.Jobs[j][k]
					delete(d, "depends")
					if fmt.Sprint(h) != fmt.Sprint(d) {
						t.Errorf("job %d opcode %d: hail %v, drove %v", j, k, h, d)
					}
				}
			}
		})
	}
}

// On every node of Ganeti's test clusters and in every mode, Drove moves at
// least the instances hail moves.
func TestEveryEvacuationOfGanetiClustersMovesAtLeastWhatHailMoves(t *testing.T) {
	dir := ganetiData(t)
	cases := 0
	for _, name := range []string{"hail-node-evac.json", "hail-change-group.json", "hail-reloc-drbd.json", "hail-alloc-drbd.json"} {
		input, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		c, err := iallocator.DecodeCluster(input)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, node := range c.Nodes {
			for _, mode := range []planner.EvacMode{planner.EvacAll, planner.PrimaryOnly, planner.SecondaryOnly} {
				r := evacuation(c, node.Name, mode)
				if len(r.Instances) == 0 {
					continue
				}
				cases++
				req, err := iallocator.EncodeRequest(c, r)
				if err != nil {
					t.Fatal(err)
				}
				_, hr := parseResult(t, "hail", runHail(t, req))
				out, err := iallocator.Answer(req, planner.DefaultOptions())
				if err != nil {
					t.Fatalf("%s %s %s: %v", name, node.Name, mode, err)
				}
				_, dr := parseResult(t, "drove", out)
				if len(dr.Moved) < len(hr.Moved) {
					t.Errorf("%s: evacuating %s (%s): hail moved %d %v, drove %d %v; drove failed %v",
						name, node.Name, mode, len(hr.Moved), hr.Moved, len(dr.Moved), dr.Moved, dr.Failed)
				}
			}
		}
	}
	if cases < 10 {
		t.Fatalf("only %d evacuation cases: the test data is not what it should be", cases)
	}
}

func evacuation(c *planner.Cluster, node string, mode planner.EvacMode) planner.Request {
	n := c.NodeIndex(node)
	r := planner.Request{Kind: planner.NodeEvacuate, Mode: mode}
	for _, in := range c.Instances {
		onP, onS := in.Primary == n, in.Secondary == n
		if (mode == planner.PrimaryOnly && onP) || (mode == planner.SecondaryOnly && onS) || (mode == planner.EvacAll && (onP || onS)) {
			r.Instances = append(r.Instances, in.Name)
		}
	}
	return r
}

var initialScore = regexp.MustCompile(`Initial score: ([0-9.]+)`)

// Drove's cluster score is Ganeti's: for every group of every Ganeti test
// cluster, it equals the score hbal prints.
func TestScoreEqualsHbal(t *testing.T) {
	dir := ganetiData(t)
	files, _ := filepath.Glob(filepath.Join(dir, "hail-*.json"))
	checked := 0
	for _, f := range files {
		input, _ := os.ReadFile(f)
		c, err := iallocator.DecodeCluster(input)
		if err != nil {
			continue // deliberately broken test inputs
		}
		// hail saves the cluster it loaded in Ganeti's text format, which
		// hbal reads.
		state := filepath.Join(t.TempDir(), "state")
		if err := exec.Command(hailPath(t), "-S", state, f).Run(); err != nil {
			continue
		}
		_, groups, err := planner.Score(c)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		for _, g := range groups {
			out, _ := exec.Command(hbalPath(t), "-t", state+".pre-ialloc", "-G", g.Group).CombinedOutput()
			m := initialScore.FindSubmatch(out)
			if m == nil {
				continue // hbal refuses empty groups
			}
			want, _ := strconv.ParseFloat(string(m[1]), 64)
			if math.Abs(want-g.Before) > 1e-6 {
				t.Errorf("%s group %s: drove %.8f, hbal %.8f", filepath.Base(f), g.Group, g.Before, want)
			}
			checked++
		}
	}
	if checked < 10 {
		t.Fatalf("only %d groups scored against hbal", checked)
	}
	t.Logf("%d group scores equal hbal's", checked)
}

// Bad documents are refused with the field named, as the command prints:
// Ganeti's broken relocate request has a number for a name, and hail
// refuses it with "key 'name': Unable to read String".
func TestHailRejectsWhatDroveRejects(t *testing.T) {
	dir := ganetiData(t)
	input, _ := os.ReadFile(filepath.Join(dir, "hail-invalid-reloc.json"))
	_, err := iallocator.Answer(input, planner.DefaultOptions())
	if err == nil || !strings.Contains(err.Error(), "request.name") {
		t.Fatalf("want a request.name error, got %v", err)
	}
	_ = bytes.MinRead
}

var (
	exclFalse     = regexp.MustCompile(`"exclusive_storage": *false`)
	diskSpindles  = regexp.MustCompile(`"spindles": *[0-9]+, *|, *"spindles": *[0-9]+`)
	exclStorTrue  = []byte(`"exclusive_storage": true`)
	variantSuffix = []string{".excl-stor", ".fail-excl-stor"}
)

// ganetiRequest reads one of Ganeti's test requests. Ganeti's shell tests
// also run some with exclusive storage turned on (name.excl-stor) and, on
// top of that, with the disks' spindles left out (name.fail-excl-stor);
// those variants are made here the same way.
func ganetiRequest(t *testing.T, dir, name string) []byte {
	t.Helper()
	base, variant := name, ""
	for _, suf := range variantSuffix {
		if strings.HasSuffix(name, suf) {
			base, variant = strings.TrimSuffix(name, suf), suf
		}
	}
	input, err := os.ReadFile(filepath.Join(dir, base))
	if err != nil {
		t.Fatal(err)
	}
	if variant != "" {
		input = exclFalse.ReplaceAll(input, exclStorTrue)
	}
	if variant == ".fail-excl-stor" {
		input = diskSpindles.ReplaceAll(input, nil)
	}
	return input
}
