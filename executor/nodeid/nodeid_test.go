package nodeid_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/drovehq/drove/executor/nodeid"
)

func TestIssueAndLoad(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca")
	if err := nodeid.InitCA(ca, "test CA"); err != nil {
		t.Fatal(err)
	}
	if err := nodeid.InitCA(ca, "test CA"); !errors.Is(err, nodeid.ErrExists) {
		t.Fatalf("second InitCA: %v, want ErrExists", err)
	}
	out := filepath.Join(dir, "n1")
	if err := nodeid.Issue(ca, "n1", out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"n1.key", nodeid.Secret} {
		st, err := os.Stat(filepath.Join(out, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, %v; want mode 0600", f, st.Mode(), err)
		}
	}
	id, err := nodeid.Load(nodeid.FilesIn(out, "n1"))
	if err != nil {
		t.Fatal(err)
	}
	if id.Node() != "n1" {
		t.Fatalf("Node() = %q", id.Node())
	}
	if err := nodeid.Issue(ca, "n1", out); !errors.Is(err, nodeid.ErrExists) {
		t.Fatalf("second Issue: %v, want ErrExists", err)
	}
	if err := nodeid.Issue(ca, "bad/name", out); err == nil {
		t.Fatal("Issue accepted a name with a slash")
	}
}

func TestLoadRefusesAKeyOthersCanRead(t *testing.T) {
	ids, err := nodeid.Bundle(t.TempDir(), "n1")
	if err != nil || ids["n1"] == nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := nodeid.Bundle(dir, "n1"); err != nil {
		t.Fatal(err)
	}
	f := nodeid.FilesIn(filepath.Join(dir, "n1"), "n1")
	for _, path := range []string{f.Key, f.Secret} {
		if err := os.Chmod(path, 0o640); err != nil {
			t.Fatal(err)
		}
		if _, err := nodeid.Load(f); !errors.Is(err, nodeid.ErrKeyExposed) {
			t.Fatalf("Load with %s mode 0640: %v, want ErrKeyExposed", path, err)
		}
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := nodeid.Load(f); err != nil {
		t.Fatal(err)
	}
}

func TestTokensArePerMoveAndPerCluster(t *testing.T) {
	dir := t.TempDir()
	a, err := nodeid.Bundle(dir, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	other, err := nodeid.Bundle(t.TempDir(), "a")
	if err != nil {
		t.Fatal(err)
	}
	k1, k2 := a["a"].Token("r/0/0"), a["a"].Token("r/1/0")
	switch {
	case len(k1) != 64:
		t.Fatalf("token %q, want 64 hex digits", k1)
	case k1 != a["b"].Token("r/0/0"):
		t.Fatal("two nodes of one cluster derive different tokens for one move")
	case k1 == k2:
		t.Fatal("two moves share a token")
	case k1 == other["a"].Token("r/0/0"):
		t.Fatal("two clusters share a token")
	}
	// A restarted dev cluster keeps its identities.
	again, err := nodeid.Bundle(dir, "a")
	if err != nil || again["a"].Token("r/0/0") != k1 {
		t.Fatalf("Bundle again: %v; token changed", err)
	}
}
