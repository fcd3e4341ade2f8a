package cpu

import (
	"os"
	"strconv"
	"testing"
)

func TestStatReadsThisProcess(t *testing.T) {
	for i := 0; i < 1e7; i++ { // some CPU, so there is something to read
		_ = strconv.Itoa(i)
	}
	ppid, secs, ok := Stat(strconv.Itoa(os.Getpid()))
	if !ok || ppid != os.Getppid() || secs < 0 {
		t.Fatalf("Stat = %d, %v, %v; want ppid %d", ppid, secs, ok, os.Getppid())
	}
	if Self() <= 0 {
		t.Fatal("Self read no CPU")
	}
	if Matching(os.Args[0]) <= 0 {
		t.Fatal("Matching did not find this process by its command line")
	}
	if busy, all := Machine(); busy <= 0 || all < busy {
		t.Fatalf("Machine = %v busy of %v", busy, all)
	}
	if Postmaster(t.TempDir()) != -1 || Postgres("") != 0 {
		t.Fatal("a directory with no server has a postmaster")
	}
}
