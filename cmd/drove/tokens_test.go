package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokensFileMustBePrivate: a tokens file others can read is refused,
// and the refusal does not show the tokens.
func TestTokensFileMustBePrivate(t *testing.T) {
	t.Setenv("DROVE_TOKENS", "")
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("tok-5e2a-secret=alice:operator\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := loadTokens(file)
	if err == nil || !strings.Contains(err.Error(), "readable by group or others") || strings.Contains(err.Error(), "tok-5e2a") {
		t.Fatalf("loadTokens of a 0644 file: %v", err)
	}
	t.Setenv("DROVE_TOKENS_FILE", file)
	code, out, errs := run(t, "", "gateway", "--database-url", "postgres://127.0.0.1:1/x")
	if code == 0 || !strings.Contains(errs, "readable by group or others") || strings.Contains(out+errs, "tok-5e2a") {
		t.Fatalf("gateway with DROVE_TOKENS_FILE 0644: exit %d, %q", code, errs)
	}
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	toks, err := loadTokens(file)
	if err != nil || toks["tok-5e2a-secret"].Name != "alice" {
		t.Fatalf("loadTokens of a 0600 file: %v, %v", toks, err)
	}
}
