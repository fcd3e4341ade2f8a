package embedded

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// fakeZpool puts a zpool first on PATH that answers call n (from 1) with
// script(n) and counts its calls.
func fakeZpool(t *testing.T, script string) (calls func() int) {
	dir := t.TempDir()
	count := filepath.Join(dir, "calls")
	body := "#!/bin/sh\nn=$(( $(cat " + count + " 2>/dev/null || echo 0) + 1 ))\necho $n > " + count + "\n" + script + "\n"
	if err := os.WriteFile(filepath.Join(dir, "zpool"), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() int {
		b, _ := os.ReadFile(count)
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
}

// A zpool list that dies of SIGABRT (zfs-fuse's "internal error" while
// another process changes the pools) is run again; one that fails
// otherwise is not, and a list that keeps aborting gives up.
func TestPoolNamesRetriesAnAbortedList(t *testing.T) {
	const abort = `echo "internal error: Invalid argument" >&2; kill -ABRT $$`
	t.Run("aborted once", func(t *testing.T) {
		calls := fakeZpool(t, `[ $n -eq 1 ] && { `+abort+`; }; printf 'a\nb\n'`)
		names, err := poolNames(t.Context())
		if err != nil || !reflect.DeepEqual(names, []string{"a", "b"}) || calls() != 2 {
			t.Fatalf("names %v, err %v after %d calls; want [a b] after 2", names, err, calls())
		}
	})
	t.Run("always aborted", func(t *testing.T) {
		calls := fakeZpool(t, abort)
		if _, err := poolNames(t.Context()); err == nil || !strings.Contains(err.Error(), "internal error") || calls() != listTries {
			t.Fatalf("err %v after %d calls; want the abort after %d", err, calls(), listTries)
		}
	})
	t.Run("failed", func(t *testing.T) {
		calls := fakeZpool(t, `echo "no such thing" >&2; exit 1`)
		if _, err := poolNames(t.Context()); err == nil || calls() != 1 {
			t.Fatalf("err %v after %d calls; want the failure after 1", err, calls())
		}
	})
}
