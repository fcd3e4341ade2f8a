package zfs

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/drovehq/drove/test/zfsenv"
)

// intProps reads what one prop call per name and property reads, for
// every name at once; a property that does not apply is left out.
func TestIntPropsReadsEveryNameInOneCommand(t *testing.T) {
	ctx := context.Background()
	ds := zfsenv.Pool(t, "props", 128) + "/d"
	if _, err := run(ctx, "create", ds); err != nil {
		t.Fatal(err)
	}
	mp, err := prop(ctx, ds, "mountpoint")
	if err != nil {
		t.Fatal(err)
	}
	var snaps []string
	for i, mib := range []int{1, 3} {
		data := make([]byte, mib<<20)
		rand.Read(data)
		if err := os.WriteFile(filepath.Join(mp, "disk"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		snap := ds + "@" + snapName(i+1)
		if err := snapshot(ctx, snap); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, snap)
	}
	got, err := intProps(ctx, snaps, "referenced", "used", "mountpoint")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		for _, p := range []string{"referenced", "used"} {
			want, err := propInt(ctx, s, p)
			if err != nil {
				t.Fatal(err)
			}
			if got[s][p] != want {
				t.Errorf("%s %s: %d, want %d as read alone", s, p, got[s][p], want)
			}
		}
		if _, ok := got[s]["mountpoint"]; ok {
			t.Errorf("%s: a snapshot's mountpoint read as a number: %v", s, got[s])
		}
	}
	if got[snaps[1]]["referenced"] < 3<<20 {
		t.Errorf("the second snapshot references %d bytes, want its 3 MiB file", got[snaps[1]]["referenced"])
	}
	if _, err := intProps(ctx, []string{ds + "@none"}, "used"); err == nil {
		t.Error("a snapshot that does not exist read without an error")
	}
}
