package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drovehq/drove/deploy/embedded"
)

func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestIAllocatorBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"cluster_tags": [], "nodegroups": {}, "nodes": {}, "instances": {}, "request": {"type": "node-evacuate", "evac_mode": "sideways", "instances": []}}`), 0o644)
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"invalid JSON on stdin", []string{"iallocator", "-"}, `{"nodes": `, "invalid JSON"},
		{"unknown mode", []string{"iallocator", bad}, "", "request.evac_mode"},
		{"missing file", []string{"iallocator", filepath.Join(dir, "nope.json")}, "", "no such file"},
		{"unknown request type", []string{"iallocator", "-"}, `{"cluster_tags": [], "nodegroups": {}, "nodes": {}, "instances": {}, "request": {"type": "teleport"}}`, "request.type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.stdin, tc.args...)
			if code != 1 || out != "" || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1, no stdout, stderr naming %q", code, out, errs, tc.want)
			}
		})
	}
}

const iallocatorDoc = `{"cluster_tags": [], "nodegroups": {"g": {"name": "default", "alloc_policy": "preferred", "networks": [], "tags": [], "ipolicy": {"std": {}, "minmax": [], "disk-templates": ["rbd"], "vcpu-ratio": 4, "spindle-ratio": 32}}},
	"nodes": {
	 "n1": {"total_memory": 8192, "reserved_memory": 0, "free_memory": 7168, "total_disk": 100000, "free_disk": 100000, "total_cpus": 4, "reserved_cpus": 0, "free_spindles": 1, "offline": false, "drained": false, "group": "g", "ndparams": {"spindle_count": 1, "exclusive_storage": false}},
	 "n2": {"total_memory": 8192, "reserved_memory": 0, "free_memory": 8192, "total_disk": 100000, "free_disk": 100000, "total_cpus": 4, "reserved_cpus": 0, "free_spindles": 1, "offline": false, "drained": false, "group": "g", "ndparams": {"spindle_count": 1, "exclusive_storage": false}}},
	"instances": {"web": {"memory": 1024, "vcpus": 1, "disk_space_total": 1000, "disks": [{"size": 1000}], "nics": [], "tags": [], "spindle_use": 1, "disk_template": "rbd", "admin_state": "up", "nodes": ["n1"]}},
	"request": {"type": "node-evacuate", "evac_mode": "all", "instances": ["web"]}}`

func TestIAllocatorAnswers(t *testing.T) {
	code, out, errs := run(t, iallocatorDoc, "iallocator", "-")
	if code != 0 || !strings.Contains(out, `"success":true`) || !strings.Contains(out, `["web","default",["n2"]]`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// Ganeti runs an allocator as ALLOCATOR FILE [OPTIONS]: an option after
// the file means what it means before it.
func TestIAllocatorOptionsAfterTheFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "req.json")
	os.WriteFile(file, []byte(iallocatorDoc), 0o644)
	_, before, _ := run(t, "", "iallocator", "--ignore-soft-errors", file)
	code, after, errs := run(t, "", "iallocator", file, "--ignore-soft-errors")
	if code != 0 || after != before || !strings.Contains(after, `"success":true`) {
		t.Fatalf("exit %d, stderr %q\nbefore the file: %s\nafter it: %s", code, errs, before, after)
	}
}

// The binary run through a link named hail or drove-hail is the allocator,
// so Ganeti can run it by path; under its own name it is drove.
func TestAllocatorNames(t *testing.T) {
	for argv0, want := range map[string]bool{"/usr/lib/ganeti/iallocators/hail": true, "drove-hail": true, "/usr/bin/drove": false, "hbal": false} {
		if _, got := asAllocator(argv0); got != want {
			t.Errorf("asAllocator(%q) = %v, want %v", argv0, got, want)
		}
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := run(t, "", "--help")
	if code != 0 || !strings.Contains(out, "iallocator") || !strings.Contains(out, "evacuate") {
		t.Fatalf("exit %d: %s", code, out)
	}
	code, out, _ = run(t, "", "iallocator", "--help")
	if code != 0 || !strings.Contains(out, "IAllocator") {
		t.Fatalf("exit %d: %s", code, out)
	}
	code, _, errs := run(t, "", "frobnicate")
	if code != 2 || !strings.Contains(errs, "unknown command") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

func TestExecutorDriverFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"executor"}, "Usage: drove executor"},
		{[]string{"executor", "--node", "n1", "--driver", "zfs"}, "--zfs-parent"},
		{[]string{"executor", "--node", "n1", "--driver", "process", "--command", "sleep 1"}, "{instance}"},
		{[]string{"executor", "--node", "n1", "--driver", "floppy"}, `unknown --driver "floppy"`},
		{[]string{"executor", "--node", "n1", "--driver", "zfs", "--zfs-parent", "p/d", "--runtime", "lxc"}, `unknown --runtime "lxc"`},
	} {
		code, _, errs := run(t, "", tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want it to say %q", tc.args, code, errs, tc.want)
		}
	}
}

// replay, listed in the README, finds `make run`'s database by default and,
// with no database there, says so and how to fix it.
func TestReplayWithoutDatabaseSaysHow(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	code, _, errs := run(t, "", "replay", "--help")
	if code != 0 || !strings.Contains(errs, "127.0.0.1:15432") {
		t.Fatalf("replay --help: exit %d, %q; want the embedded database as the default", code, errs)
	}
	port, err := embedded.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/drove?sslmode=disable", port)
	code, out, errs := run(t, "", "replay", "--database-url", url)
	if code != 1 || out != "" || !strings.Contains(errs, "is `make run` running?") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 saying no database answers", code, out, errs)
	}
}
