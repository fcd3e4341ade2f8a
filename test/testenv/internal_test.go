package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestMissingBinariesSayHowToInstall(t *testing.T) {
	_, err := findPostgresBinaries(t.TempDir(), []string{filepath.Join(t.TempDir(), "*", "bin")})
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

	got, err := findPostgresBinaries("", glob)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "16", "bin", "initdb"); got.initdb != want {
		t.Errorf("initdb = %s, want %s", got.initdb, want)
	}

	onPath := filepath.Join(t.TempDir(), "bin")
	fakeBinaries(t, onPath)
	got, err = findPostgresBinaries(onPath, glob)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(onPath, "postgres"); got.postgres != want {
		t.Errorf("postgres = %s, want %s", got.postgres, want)
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

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://u:p@h:5432/postgres?sslmode=disable", "postgres://u:p@h:5432/test_x?sslmode=disable"},
		{"postgresql://u@h/", "postgresql://u@h/test_x"},
		{"host=h user=u dbname=postgres", "host=h user=u dbname=postgres dbname=test_x"},
	} {
		if got := withDatabase(tc.dsn, "test_x"); got != tc.want {
			t.Errorf("withDatabase(%q) = %q, want %q", tc.dsn, got, tc.want)
		}
	}
}

func TestTopicPrefixIsLegal(t *testing.T) {
	legal := regexp.MustCompile(`^test-[a-zA-Z0-9-]+-[0-9a-f]{8}-$`)
	for _, name := range []string{"TestX", "TestX/sub_case#01", strings.Repeat("TestLong", 40)} {
		p := topicPrefix(name)
		if !legal.MatchString(p) || len(p) > 80 {
			t.Errorf("topicPrefix(%q) = %q", name, p)
		}
	}
}
