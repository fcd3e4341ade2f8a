// Package hailsuite runs Ganeti's own shell tests of hail (the
// htools-*.test files of Debian's ganeti-testsuite, read with Debian's
// shelltestrunner, unchanged) with `drove iallocator` in hail's place.
// It holds no code: the test builds the drove binary, lays out a
// directory the way Ganeti's offline-test.sh expects (./test/hs/hail,
// $TESTDATA_DIR, the $T fixtures), runs shelltest and fails naming every
// hail check that did not pass.
package hailsuite
