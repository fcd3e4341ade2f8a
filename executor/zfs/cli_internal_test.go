package zfs

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
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

// A snapshot asked for under a context already done is taken all the
// same, and is listed when the call returns, with the context's error: a
// killed `zfs snapshot` is made by zfs-fuse's daemon later, after the
// cleanup of the phase it was cut from had listed nothing to drop.
func TestASnapshotIsThereWhenItsCallReturns(t *testing.T) {
	ds := zfsenv.Pool(t, "snapdone", 128) + "/d"
	if _, err := run(context.Background(), "create", ds); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := snapshot(ctx, ds+"@"+snapName(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("snapshot under a done context: %v, want context.Canceled", err)
	}
	ns, err := snapNumbers(context.Background(), ds)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ns, []int{1}) {
		t.Fatalf("snapshots listed after the call: %v, want [1]", ns)
	}
}

// A move's marks are trusted only while their voucher names the move:
// setVouched sets the voucher after the marks, so a mark that fails
// leaves the voucher as it was, and clearVouched leaves nothing.
func TestVouchedMarksComeWholeOrNotAtAll(t *testing.T) {
	ctx := context.Background()
	ds := zfsenv.Pool(t, "vouch", 128) + "/d"
	if _, err := run(ctx, "create", ds); err != nil {
		t.Fatal(err)
	}
	state := func() recvState {
		ps, err := props(ctx, ds, propMigration, propCreated, propBase)
		if err != nil {
			t.Fatal(err)
		}
		return stateOf(ps, "k1")
	}
	if err := setVouched(ctx, ds, map[string]string{propCreated: "yes", propBase: "3"}, propMigration, "k1"); err != nil {
		t.Fatal(err)
	}
	if st := state(); !st.known || !st.created || st.base != 3 {
		t.Fatalf("after setVouched: %+v, want k1's marks", st)
	}
	err := setVouched(ctx, ds, map[string]string{propBase: "4", "quota": "not a size"}, propMigration, "k2")
	if err == nil {
		t.Fatal("a mark that cannot be set was not an error")
	}
	if v, _ := prop(ctx, ds, propMigration); v != "k1" {
		t.Fatalf("the voucher is %q after a failed mark, want k1 still", v)
	}
	clearVouched(ctx, ds, propMigration, propCreated, propBase)
	if st := state(); st.known {
		t.Fatalf("after clearVouched: %+v, want no marks", st)
	}
	for _, p := range []string{propCreated, propBase} {
		if set, _ := localProps(ctx, ds, p); len(set) > 0 {
			t.Errorf("%s still set after clearVouched", p)
		}
	}
}

// A sync clears the source's stale marks beside its snapshot, not before
// it (sendAsking): that holds because a replication stream carries the
// file system's properties as they are when the send starts. A mark
// cleared after the snapshot does not arrive; one set after it does.
func TestAReplicationStreamCarriesThePropertiesOfItsStart(t *testing.T) {
	ctx := context.Background()
	pool := zfsenv.Pool(t, "propsend", 128)
	ds := pool + "/d"
	if _, err := run(ctx, "create", ds); err != nil {
		t.Fatal(err)
	}
	if !Detect(ctx, ds).Replicate {
		t.Fatal("this zfs sends no replication streams; the driver's first sync sends none either, and this test has nothing to hold")
	}
	if err := setProp(ctx, ds, propMigration, "stale"); err != nil {
		t.Fatal(err)
	}
	if err := snapshot(ctx, ds+"@s1"); err != nil {
		t.Fatal(err)
	}
	clearProps(ctx, ds, propMigration)
	if err := setProp(ctx, ds, propBase, "late"); err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	if err := send(ctx, &stream, false, "-R", ds+"@s1"); err != nil {
		t.Fatal(err)
	}
	into := pool + "/copy"
	if err := recv(ctx, &stream, into); err != nil {
		t.Fatal(err)
	}
	ps, err := props(ctx, into, propMigration, propBase)
	if err != nil {
		t.Fatal(err)
	}
	if v := ps[propMigration]; v != "-" {
		t.Errorf("a mark cleared after the snapshot arrived as %q", v)
	}
	if v := ps[propBase]; v != "late" {
		t.Errorf("a mark set after the snapshot arrived as %q, want late", v)
	}
}
