package embedded

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMissingBinariesSayHowToInstall(t *testing.T) {
	_, err := findBinaries(t.TempDir(), []string{filepath.Join(t.TempDir(), "*", "bin")})
	if !errors.Is(err, ErrNoPostgres) {
		t.Fatalf("err = %v, want ErrNoPostgres", err)
	}
	for _, want := range []string{"apt-get install postgresql-15", "DATABASE_URL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestFindBinariesPrefersPathThenNewest(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"9.6", "15", "16"} {
		fakeBinaries(t, filepath.Join(root, v, "bin"))
	}
	glob := []string{filepath.Join(root, "*", "bin")}
	got, err := findBinaries("", glob)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "16", "bin", "initdb"); got.Initdb != want {
		t.Errorf("initdb = %s, want %s", got.Initdb, want)
	}
	onPath := filepath.Join(t.TempDir(), "bin")
	fakeBinaries(t, onPath)
	got, err = findBinaries(onPath, glob)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(onPath, "postgres"); got.Postgres != want {
		t.Errorf("postgres = %s, want %s", got.Postgres, want)
	}
}

func fakeBinaries(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "postgres"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
