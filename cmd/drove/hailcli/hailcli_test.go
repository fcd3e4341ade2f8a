package hailcli

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseLikeGetopt(t *testing.T) {
	for _, tc := range []struct {
		args []string
		rest []string
		want func(o Options) bool
	}{
		{[]string{"req.json", "--ignore-soft-errors"}, []string{"req.json"}, func(o Options) bool { return o.IgnoreSoftErr }},
		{[]string{"-vvv", "-p", "-", "-S", "out"}, []string{"-"}, func(o Options) bool { return o.Verbose == 3 && o.PrintNodes && o.Save == "out" }},
		{[]string{"--simu", "p,8,8T,16g,16", "--simu=u,1,1,1,1", "f"}, []string{"f"}, func(o Options) bool { return len(o.Simulate) == 2 }},
		{[]string{"-tdata", "f", "--restrict-allocation-to", "a,b"}, []string{"f"}, func(o Options) bool { return o.TextData == "data" && len(o.Restrict) == 2 }},
		{[]string{"-pname,f_mem", "--", "-v"}, []string{"-v"}, func(o Options) bool { return o.Verbose == 0 && len(o.Fields) == 2 }},
	} {
		o, rest, err := parse(tc.args)
		if err != nil || !reflect.DeepEqual(rest, tc.rest) || !tc.want(o) {
			t.Errorf("parse(%q) = %+v, %q, %v", tc.args, o, rest, err)
		}
	}
}

// hail's exit codes: 2 for a command line getopt refuses, 1 for a missing
// or extra argument or an unusable request, 0 for help and version.
func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{nil, 1, "needs an input file"},
		{[]string{"a", "b"}, 1, "Only one argument"},
		{[]string{"--no-such-option"}, 2, "unrecognized option"},
		{[]string{"--s"}, 2, "ambiguous"},
		{[]string{"-t"}, 2, "requires an argument"},
		{[]string{"--mond=yes", "f"}, 1, "does not query"},
		{[]string{"--version"}, 0, ""},
		{[]string{"--help-completion"}, 0, ""},
		{[]string{filepath.Join(t.TempDir(), "none.json")}, 1, "no such file"},
	} {
		var out, errs bytes.Buffer
		code := Run("hail", tc.args, strings.NewReader(""), &out, &errs)
		if code != tc.code || !strings.Contains(errs.String(), tc.err) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, errs.String(), tc.code, tc.err)
		}
	}
}

// -t takes the cluster from the text file, -S saves it before and after,
// and the answer is the same with the options before or after the file.
func TestTextDataAndSave(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "cluster.data")
	os.WriteFile(text, []byte("g|u1|preferred||\n\nn1|4096|0|4096|10000|10000|4|N|u1|1|\nn2|4096|0|4096|10000|10000|4|N|u1|1|\n\n\n\n"), 0o644)
	req := filepath.Join(dir, "req.json")
	os.WriteFile(req, []byte(`{"cluster_tags": [], "nodegroups": {}, "nodes": {}, "instances": {},
	  "request": {"type": "allocate", "name": "new", "disk_template": "plain", "memory": 1024, "vcpus": 1,
	  "disk_space_total": 2048, "disks": [{"size": 2048, "mode": "rw"}], "nics": [], "tags": [], "spindle_use": 1, "required_nodes": 1}}`), 0o644)
	var out1, out2, errs bytes.Buffer
	save := filepath.Join(dir, "state")
	if code := Run("hail", []string{"-t", text, req, "-S", save}, nil, &out1, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	if code := Run("hail", []string{req, "-t", text}, nil, &out2, &errs); code != 0 || out1.String() != out2.String() {
		t.Fatalf("exit %d: %s\n%s\n%s", code, errs.String(), out1.String(), out2.String())
	}
	if !strings.Contains(out1.String(), `"success":true`) {
		t.Fatalf("answer: %s", out1.String())
	}
	pre, _ := os.ReadFile(save + ".pre-ialloc")
	post, _ := os.ReadFile(save + ".post-ialloc")
	if !strings.Contains(string(post), "new|1024|2048|1|running") || strings.Contains(string(pre), "new|") {
		t.Fatalf("pre:\n%s\npost:\n%s", pre, post)
	}
}
