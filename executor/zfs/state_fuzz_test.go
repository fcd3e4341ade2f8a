package zfs

import "testing"

// A receive's marks read back as they were saved, an older executor's
// marks still read, and anything else reads as unknown, never as a
// state the move did not save.
func TestReceiveMarksReadBack(t *testing.T) {
	for _, st := range []recvState{
		{key: "r1/0/0", created: true, base: 0, known: true},
		{key: "r1/0/0", created: false, base: 12, known: true},
		{key: "a key with spaces/1/2", created: true, base: 3, known: true},
	} {
		if got := stateOf(map[string]string{propMigration: st.mark()}, st.key); got != st {
			t.Errorf("%q read back as %+v, want %+v", st.mark(), got, st)
		}
	}
	old := map[string]string{propMigration: "r1/0/0", propCreated: "yes", propBase: "4"}
	if got, want := stateOf(old, "r1/0/0"), (recvState{key: "r1/0/0", created: true, base: 4, known: true}); got != want {
		t.Errorf("an older executor's marks read as %+v, want %+v", got, want)
	}
	for _, v := range []string{"", "r2/0/0 created=yes base=1", "r1/0/0 created=maybe base=1",
		"r1/0/0 created=yes base=-1", "r1/0/0 created=yes", "r1/0/0 base=1 created=yes", "r1/0/0 created=yes base=1 more"} {
		if got := stateOf(map[string]string{propMigration: v}, "r1/0/0"); got.known {
			t.Errorf("%q read as known: %+v", v, got)
		}
	}
}

// Any value reads without panic; one that reads as known says what its
// mark would say.
func FuzzStateOf(f *testing.F) {
	f.Add("k/0/0 created=yes base=3", "k/0/0")
	f.Add("k/0/0", "k/0/0")
	f.Add("k/0/0 created=no base=00", "k/0/0")
	f.Fuzz(func(t *testing.T, v, key string) {
		st := stateOf(map[string]string{propMigration: v, propCreated: "yes", propBase: "2"}, key)
		if st.key != key {
			t.Fatalf("%q: state of key %q", v, st.key)
		}
		if !st.known || v == key {
			return
		}
		if again := stateOf(map[string]string{propMigration: st.mark()}, key); again != st {
			t.Fatalf("%q read as %+v, its mark %q as %+v", v, st, st.mark(), again)
		}
	})
}
