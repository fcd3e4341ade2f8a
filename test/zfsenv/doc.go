// Package zfsenv gives tests real ZFS: it makes sure the zfs-fuse daemon
// runs (starting it if not) and creates file-backed pools with unique
// names, one per simulated node, destroyed when the test ends. Tests that
// use it never skip: if ZFS is unusable they fail and say why, and
// `make test-deps` (test/tools/deps.sh) installs zfs-fuse.
package zfsenv
