package transfer

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/executor/nodeid"
	"golang.org/x/sys/unix"
)

// A question is a stream with no body: its receiver answers it without
// reading the end marker that follows the header. Closed with those bytes
// unread, a connection is reset rather than ended, and the reset drops
// what of the answer the socket has not sent yet: the zfs bench saw the
// answer to a checksum question (the block sums of 1 GiB) lost that way,
// as "connection reset by peer".
func TestAnAnswerAfterTheEndMarkerArrivedIsRead(t *testing.T) {
	ids, err := nodeid.Bundle(filepath.Join(t.TempDir(), "pki"), "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	for _, secure := range []bool{false, true} {
		t.Run("secure="+strconv.FormatBool(secure), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			asker, answerer := ctx, ctx
			if secure {
				asker = WithLink(ctx, Link{Identity: ids["a"], Peer: "b"})
				answerer = WithLink(ctx, Link{Identity: ids["b"], Peer: "a"})
			}
			l, err := Listen("127.0.0.1:0", "req/0/0", "")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			const questions = 20
			// An answer larger than the socket sends at once, as a
			// checksum's block sums are.
			sums := strings.Repeat("0123abcd", 1<<17)
			go func() {
				for i := range questions {
					s, err := l.Accept(answerer)
					if err != nil {
						return
					}
					waitUnread(t, s)
					_ = s.Reply(Reply{OK: true, Meta: map[string]string{"n": strconv.Itoa(i), "sums": sums}})
				}
			}()
			for i := range questions {
				r, err := Request(asker, l.Addr(), Header{Key: "req/0/0", Kind: "hello"})
				if err != nil || r.Meta["n"] != strconv.Itoa(i) || r.Meta["sums"] != sums {
					t.Fatalf("question %d: answer %q, %d bytes of sums, %v", i, r.Meta["n"], len(r.Meta["sums"]), err)
				}
			}
		})
	}
}

// waitUnread waits until the asker's end marker is here: unread in the
// socket, or already in a read buffer.
func waitUnread(t *testing.T, s *Stream) {
	raw, sealed := s.conn, (*sealedConn)(nil)
	if sc, ok := s.conn.(*sealedConn); ok {
		raw, sealed = sc.Conn, sc
	}
	rc, err := raw.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Error(err)
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if s.br.Buffered() > 0 || sealed != nil && (sealed.br.Buffered() > 0 || len(sealed.plain) > 0) {
			return
		}
		var unread int
		_ = rc.Control(func(fd uintptr) {
			var err error
			if unread, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ); err != nil {
				unread = -1
			}
		})
		if unread != 0 {
			return
		}
		time.Sleep(time.Millisecond) // polling the socket, with a deadline
	}
	t.Error("the end marker did not arrive in 5 s")
}
