package embedded

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// StateRoot holds the clusters whose own directory the server's user
// cannot reach (see serverDir). It is the usual home of a service's state.
var StateRoot = "/var/lib/drove/postgres"

// serverDir is where the cluster's data and socket live: dir itself when
// the server's user can reach it, or else a directory of its own under
// StateRoot named after dir, so that the same dir finds the same cluster
// again after a restart.
//
// The second case is the common one for a newcomer: root clones Drove
// into its home (mode 0700) and runs `make run`; postgres runs as the
// postgres user, who may not enter root's home. Drove never loosens the
// permissions of the user's directories to make room for the server.
func serverDir(dir string, cred *syscall.Credential) (string, error) {
	if cred == nil || reachable(dir, cred) {
		return dir, nil
	}
	sum := sha256.Sum256([]byte(dir))
	name := unsafeChars.ReplaceAllString(strings.Trim(dir, "/"), "_")
	name = name[max(0, len(name)-48):] + "-" + hex.EncodeToString(sum[:6])
	out := filepath.Join(StateRoot, name)
	if err := os.MkdirAll(StateRoot, 0o755); err != nil {
		return "", fmt.Errorf("%w: %s is not reachable by the postgres user and %v", ErrNoPostgres, dir, err)
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return "", err
	}
	if err := os.Chown(out, int(cred.Uid), int(cred.Gid)); err != nil {
		return "", err
	}
	return out, nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// reachable reports whether a process with cred may search every
// directory from / down to dir's parent (dir itself is made the server's).
// It reads the mode bits as the kernel would for a process with only
// cred's uid and gid (the server keeps no supplementary groups); ACLs
// are not read, so a directory opened to postgres by an ACL alone counts
// as closed and the cluster moves under StateRoot, which always works.
func reachable(dir string, cred *syscall.Credential) bool {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if !searchable(d, cred) {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

func searchable(dir string, cred *syscall.Credential) bool {
	fi, err := os.Stat(dir)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	switch {
	case st.Uid == cred.Uid:
		return st.Mode&0o100 != 0
	case st.Gid == cred.Gid:
		return st.Mode&0o010 != 0
	}
	return st.Mode&0o001 != 0
}

// linkData leaves a symlink dir/data → the relocated data directory, so
// whoever looks in dir finds the cluster (root can follow it).
func linkData(dir, server string) error {
	link := filepath.Join(dir, "data")
	if target, err := os.Readlink(link); err == nil {
		if target == filepath.Join(server, "data") {
			return nil
		}
		if err := os.Remove(link); err != nil {
			return err
		}
	} else if _, err := os.Lstat(link); err == nil {
		return nil // a real data directory from before: leave it alone
	}
	return os.Symlink(filepath.Join(server, "data"), link)
}
