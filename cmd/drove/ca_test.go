package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCAIssuesWhatTheExecutorTakes: `drove ca init` and `drove ca issue`
// make the files `drove executor` takes, and the executor refuses a
// certificate of another node, a key others can read, and a networked
// driver with neither certificates nor --plain-transfer.
func TestCAIssuesWhatTheExecutorTakes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	if code, _, errs := run(t, "", "ca", "init", "--dir", dir); code != 0 {
		t.Fatalf("ca init: exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, "", "ca", "init", "--dir", dir); code == 0 || !strings.Contains(errs, "exists") {
		t.Fatalf("second ca init: exit %d, %q; want a refusal to overwrite", code, errs)
	}
	code, out, errs := run(t, "", "ca", "issue", "--dir", dir, "n1")
	if code != 0 || !strings.Contains(out, "--tls-cert") {
		t.Fatalf("ca issue: exit %d, %q, %q", code, out, errs)
	}
	n1 := filepath.Join(dir, "n1")
	tls := []string{"--tls-cert", filepath.Join(n1, "n1.crt"), "--tls-key", filepath.Join(n1, "n1.key"),
		"--tls-ca", filepath.Join(n1, "ca.crt"), "--transfer-secret", filepath.Join(n1, "transfer.secret")}
	proc := []string{"--driver", "process", "--command", "sleep {instance}", "--state-dir", t.TempDir()}
	cases := []struct {
		args []string
		want string
	}{
		{append([]string{"executor", "--node", "n2"}, tls...), `names node "n1", not --node "n2"`},
		{append(append([]string{"executor", "--node", "n1"}, proc...), "--tls-cert", "x"), "go together"},
		{append(append([]string{"executor", "--node", "n1"}, proc...), "--brokers", "127.0.0.1:1"), "--plain-transfer"},
	}
	for _, tc := range cases {
		code, _, errs := run(t, "", tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want it to say %q", tc.args, code, errs, tc.want)
		}
	}
	if err := os.Chmod(filepath.Join(n1, "n1.key"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, "", append([]string{"executor", "--node", "n1"}, tls...)...)
	if code == 0 || !strings.Contains(errs, "readable by group or others") {
		t.Errorf("executor with a 0644 key: exit %d, stderr %q", code, errs)
	}
}
