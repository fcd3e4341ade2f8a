package planner

import (
	"os/exec"
	"strings"
	"testing"
)

// The planner is a pure library: it must not reach Kafka, Postgres, ZFS,
// HTTP, the file system or the clock. This test reads the real import lists
// from the Go tool: the planner packages import only the standard library's
// pure packages, and nothing outside the planner itself.
func TestPlannerImportsNoIO(t *testing.T) {
	pkgs := []string{"github.com/drovehq/drove/planner", "github.com/drovehq/drove/planner/iallocator", "github.com/drovehq/drove/planner/htoolsdata"}
	allowed := map[string]bool{"bytes": true, "encoding/json": true, "errors": true, "fmt": true,
		"maps": true, "math": true, "sort": true, "strings": true, "slices": true, "strconv": true, "cmp": true,
		"io": true} // io for its error values and interfaces; nothing here opens anything
	out, err := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		for _, imp := range strings.Fields(imports) {
			if !allowed[imp] && !strings.HasPrefix(imp, "github.com/drovehq/drove/planner") {
				t.Errorf("%s imports %s", pkg, imp)
			}
		}
	}
	out, err = exec.Command("go", append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if !strings.HasPrefix(dep, "github.com/drovehq/drove/planner") {
			t.Errorf("the planner depends on %s", dep)
		}
	}
}

// stagedJSON is the standard library's next JSON package as its authors
// publish it until it leaves GOEXPERIMENT (encoding/json/v2), which events
// decodes with (events/deps_test.go says why); pure encoding, no I/O.
const stagedJSON = "github.com/go-json-experiment/json"

// The planner service's decisions (planner/inventory, planner/jobs,
// planner/migration, and their downtime model planner/downtime) are pure
// too: folds and decisions over events, with the service's loop the only
// I/O. They may import events and the planner,
// nothing else of Drove's (no events/kafka), nothing outside the standard
// library, and nothing of it that reaches the network, files or processes.
func TestDecisionPackagesDoNoIO(t *testing.T) {
	pkgs := []string{"github.com/drovehq/drove/planner/inventory", "github.com/drovehq/drove/planner/jobs",
		"github.com/drovehq/drove/planner/migration", "github.com/drovehq/drove/planner/nodes", "github.com/drovehq/drove/planner/downtime"}
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != "github.com/drovehq/drove/events" && !strings.HasPrefix(dep, "github.com/drovehq/drove/planner") &&
			!strings.HasPrefix(dep, stagedJSON) {
			t.Errorf("a decision package depends on %s", dep)
		}
	}
	out, err = exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		for _, imp := range strings.Fields(imports) {
			if imp == "os" || imp == "syscall" || imp == "database/sql" || strings.HasPrefix(imp, "net") ||
				strings.HasPrefix(imp, "os/") {
				t.Errorf("%s imports %s", pkg, imp)
			}
		}
	}
}
