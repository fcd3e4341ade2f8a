package transfer_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/executor/nodeid"
	"github.com/drovehq/drove/executor/transfer"
	"github.com/drovehq/drove/executor/transfer/wiretap"
	"github.com/drovehq/drove/test/testenv"
)

// marker is a known string of a move's data; it must never be seen on the
// wire of a secure stream.
const marker = "DROVE-SECRET-MARKER-7f3a9c"

// cluster issues identities a, b and c from one CA, and a from another.
type cluster struct {
	ids   map[string]*nodeid.Identity
	other *nodeid.Identity // "b", from another CA
}

func newCluster(t *testing.T) cluster {
	t.Helper()
	ids, err := nodeid.Bundle(t.TempDir(), "a", "b", "c")
	if err != nil {
		t.Fatal(err)
	}
	other, err := nodeid.Bundle(t.TempDir(), "b")
	if err != nil {
		t.Fatal(err)
	}
	return cluster{ids: ids, other: other["b"]}
}

// aToB is a stream's two links from a to b, TLS when secure, else plain,
// and a listener for it, closed with the test.
func (c cluster) aToB(t *testing.T, secure bool) (toB, fromA transfer.Link, l *transfer.Listener) {
	t.Helper()
	if secure {
		toB, fromA = transfer.Link{Identity: c.ids["a"], Peer: "b"}, transfer.Link{Identity: c.ids["b"], Peer: "a"}
	}
	l, err := transfer.Listen("127.0.0.1:0", "req/0/0", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return toB, fromA, l
}

// serveOne accepts one stream under link, reads its body and replies OK.
func serveOne(ctx context.Context, l *transfer.Listener, link transfer.Link) <-chan []byte {
	got := make(chan []byte, 1)
	go func() {
		s, err := l.Accept(transfer.WithLink(ctx, link))
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(s)
		_ = s.Reply(transfer.Reply{OK: true})
		got <- b
	}()
	return got
}

func send(ctx context.Context, addr string, link transfer.Link, body []byte) error {
	snd, err := transfer.Dial(transfer.WithLink(ctx, link), addr, transfer.Header{Key: "req/0/0", Kind: "recv"}, nil)
	if err != nil {
		return err
	}
	if _, err := snd.Write(body); err != nil {
		return err
	}
	r, err := snd.Finish()
	if err != nil {
		return err
	}
	return r.Err()
}

func markedBody() []byte {
	return bytes.Repeat([]byte("some instance data, then "+marker+"\n"), 20000)
}

func TestSecureStreamCarriesTheBodyEncrypted(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := newCluster(t)
	for _, secure := range []bool{true, false} {
		l, err := transfer.Listen("127.0.0.1:0", "req/0/0", "")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var toB, fromA transfer.Link
		if secure {
			toB, fromA = transfer.Link{Identity: c.ids["a"], Peer: "b"}, transfer.Link{Identity: c.ids["b"], Peer: "a"}
		}
		p := wiretap.New(t, l.Addr(), nil)
		got := serveOne(ctx, l, fromA)
		body := markedBody()
		if err := send(ctx, p.Addr(), toB, body); err != nil {
			t.Fatalf("secure=%v: %v", secure, err)
		}
		if b := <-got; !bytes.Equal(b, body) {
			t.Fatalf("secure=%v: body differs (%d bytes, want %d)", secure, len(b), len(body))
		}
		wire := p.Captured()
		if len(wire) < len(body) {
			t.Fatalf("secure=%v: the tap saw %d bytes, fewer than the body", secure, len(wire))
		}
		// The plain run shows the tap works: it sees the marker there.
		if seen := bytes.Contains(wire, []byte(marker)); seen == secure {
			t.Fatalf("secure=%v: marker on the wire: %v", secure, seen)
		}
	}
}

func TestSenderRefusesAReceiverThatIsNotTheTarget(t *testing.T) {
	c := newCluster(t)
	cases := []struct {
		name string
		recv transfer.Link // what the listener presents
	}{
		{"another node's certificate", transfer.Link{Identity: c.ids["c"], Peer: "a"}},
		{"a certificate from another CA", transfer.Link{Identity: c.other, Peer: "a"}},
		{"no TLS at all", transfer.Link{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			l, err := transfer.Listen("127.0.0.1:0", "req/0/0", "")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			got := serveOne(ctx, l, tc.recv)
			err = send(ctx, l.Addr(), transfer.Link{Identity: c.ids["a"], Peer: "b"}, markedBody())
			if !errors.Is(err, transfer.ErrPeer) {
				t.Fatalf("send: %v, want ErrPeer", err)
			}
			_ = l.Close()
			if b := <-got; b != nil {
				t.Fatalf("the receiver got %d bytes", len(b))
			}
		})
	}
}

func TestReceiverRefusesASenderThatIsNotTheSource(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := newCluster(t)
	l, err := transfer.Listen("127.0.0.1:0", "req/0/0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	refused := make(chan error, 4)
	got := serveOne(ctx, l, transfer.Link{Identity: c.ids["b"], Peer: "a", Refused: func(err error) { refused <- err }})
	// Node c, with a valid certificate of the cluster, is refused: in TLS
	// 1.3 the client learns it at its first read, so at Finish.
	if err := send(ctx, l.Addr(), transfer.Link{Identity: c.ids["c"], Peer: "b"}, []byte("from c")); err == nil {
		t.Fatal("node c's stream was accepted by a receiver waiting for node a")
	}
	// So is a sender without TLS; the receiver then still serves a.
	if err := send(ctx, l.Addr(), transfer.Link{}, []byte("plain")); err == nil {
		t.Fatal("a plain stream was accepted by a secure receiver")
	}
	if err := send(ctx, l.Addr(), transfer.Link{Identity: c.ids["a"], Peer: "b"}, []byte("from a")); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "from a" {
		t.Fatalf("the receiver served %q, want node a's stream", b)
	}
	if n := len(refused); n != 2 {
		t.Fatalf("the receiver heard of %d refusals, want 2 (node c, plain)", n)
	}
	if err := <-refused; !errors.Is(err, nodeid.ErrWrongNode) {
		t.Fatalf("first refusal: %v, want ErrWrongNode", err)
	}
}

func TestTokenIsASecondFactor(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := newCluster(t)
	l, err := transfer.Listen("127.0.0.1:0", "req/0/0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := serveOne(ctx, l, transfer.Link{Identity: c.ids["b"], Peer: "a"})
	// The right node with a wrong token (another cluster's secret, say)
	// is refused by the receiver's reply.
	snd, err := transfer.Dial(transfer.WithLink(ctx, transfer.Link{Identity: c.ids["a"], Peer: "b"}), l.Addr(),
		transfer.Header{Key: "req/0/0", Token: "not-the-token", Kind: "recv"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := snd.Finish()
	if err == nil && r.Err() == nil {
		t.Fatal("a wrong token was accepted")
	}
	if err := send(ctx, l.Addr(), transfer.Link{Identity: c.ids["a"], Peer: "b"}, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "ok" {
		t.Fatalf("served %q", b)
	}
}

// TestSilentListenerIsNotAnImpostor: a handshake cut short by the
// caller's context (a cancelled move, a deadline) is not a refusal: it
// must not read as ErrPeer, which fails a move for good.
func TestSilentListenerIsNotAnImpostor(t *testing.T) {
	c := newCluster(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if conn, err := ln.Accept(); err == nil {
			accepted <- conn // held open, never answered
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err = transfer.Dial(transfer.WithLink(ctx, transfer.Link{Identity: c.ids["a"], Peer: "b"}), ln.Addr().String(),
		transfer.Header{Key: "req/0/0", Kind: "recv"}, nil)
	if err == nil || errors.Is(err, transfer.ErrPeer) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial to a silent listener: %v; want the deadline, not ErrPeer", err)
	}
	(<-accepted).Close()
}

// noCertificate is a TLS client that presents no certificate at all.
type noCertificate struct{}

func (noCertificate) ServerConfig(string) *tls.Config { return nil }
func (noCertificate) ClientConfig(string) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true} //nolint:gosec // the receiver's refusal is tested
}
func (noCertificate) Token(string) string { return "" }

// TestReceiverRefusesUntrustedSenders: a receiver waiting for node a
// refuses, each for its own reason, a sender named a whose certificate
// another CA signed, a TLS client with no certificate, and a's
// certificate once expired; it serves a's valid one, and refuses that one
// too from the moment it is revoked, with no restart.
func TestReceiverRefusesUntrustedSenders(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	ids, err := nodeid.Bundle(dir, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	// Node a of another CA, trusting ours: so only the receiver refuses.
	otherDir := t.TempDir()
	if _, err := nodeid.Bundle(otherDir, "a"); err != nil {
		t.Fatal(err)
	}
	of := nodeid.FilesIn(filepath.Join(otherDir, "a"), "a")
	of.CA = nodeid.FilesIn(filepath.Join(dir, "a"), "a").CA
	otherA, err := nodeid.Load(of)
	if err != nil {
		t.Fatal(err)
	}
	expired, err := nodeid.Load(testenv.ExpiredIdentity(t, dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := transfer.Listen("127.0.0.1:0", "req/0/0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	refused := make(chan error, 8)
	recv := transfer.Link{Identity: ids["b"], Peer: "a", Refused: func(err error) { refused <- err }}
	refusedFor := func(name string, from transfer.Identity, want string) {
		t.Helper()
		if err := send(ctx, l.Addr(), transfer.Link{Identity: from, Peer: "b"}, []byte(name)); err == nil {
			t.Fatalf("%s: the receiver took the stream", name)
		}
		select {
		case err := <-refused:
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: refused with %v, want %q", name, err, want)
			}
		case <-ctx.Done():
			t.Fatalf("%s: the receiver did not report a refusal", name)
		}
	}
	got := serveOne(ctx, l, recv)
	refusedFor("another CA", otherA, "not from this cluster's CA")
	refusedFor("no certificate", noCertificate{}, "didn't provide a certificate")
	refusedFor("expired", expired, "expired")
	if err := send(ctx, l.Addr(), transfer.Link{Identity: ids["a"], Peer: "b"}, []byte("from a")); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "from a" {
		t.Fatalf("the receiver served %q, want node a's stream", b)
	}
	// Revoked: the list is copied beside b's ca.crt; b's identity, loaded
	// before, reads it at the next handshake.
	testenv.Revoke(t, dir, "a", "b")
	got = serveOne(ctx, l, recv)
	refusedFor("revoked", ids["a"], nodeid.ErrRevoked.Error())
	_ = l.Close()
	if b := <-got; b != nil {
		t.Fatalf("the receiver served %q from a revoked certificate", b)
	}
}

// TestRefusalMidBodyReachesTheSender: a receiver that fails part way
// through a body (its pool full, say) replies at once and stops reading;
// the sender, still writing, stops with the receiver's reason, not only
// "cut", over TLS and plain TCP alike.
func TestRefusalMidBodyReachesTheSender(t *testing.T) {
	c := newCluster(t)
	for _, secure := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		toB, fromA, l := c.aToB(t, secure)
		replied := make(chan error, 1)
		go func() {
			s, err := l.Accept(transfer.WithLink(ctx, fromA))
			if err != nil {
				replied <- err
				return
			}
			if _, err := io.ReadFull(s, make([]byte, 1<<20)); err != nil {
				replied <- err
				return
			}
			replied <- s.Reply(transfer.Reply{Error: "cannot receive: out of space"})
		}()
		snd, err := transfer.Dial(transfer.WithLink(ctx, toB), l.Addr(), transfer.Header{Key: "req/0/0", Kind: "recv"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		chunk := make([]byte, 1<<20)
		for err == nil && ctx.Err() == nil {
			_, err = snd.Write(chunk)
		}
		snd.Close()
		if !errors.Is(err, transfer.ErrCut) || !strings.Contains(err.Error(), "out of space") {
			t.Fatalf("secure=%v: the sender stopped with %v; want the receiver's reason", secure, err)
		}
		if rerr := <-replied; rerr != nil {
			t.Fatalf("secure=%v: the receiver: %v", secure, rerr)
		}
	}
}

// TestStuckSenderStopsWhenCancelled: a sender blocked writing to a
// receiver that reads nothing returns once its context ends, over TLS
// (whose records a sender batches under a lock) and plain TCP alike: the
// cancel closes the connection under the blocked write.
func TestStuckSenderStopsWhenCancelled(t *testing.T) {
	c := newCluster(t)
	for _, secure := range []bool{true, false} {
		toB, fromA, l := c.aToB(t, secure)
		accepted := make(chan *transfer.Stream, 1)
		go func() {
			s, _ := l.Accept(transfer.WithLink(t.Context(), fromA))
			accepted <- s // and never read
		}()
		ctx, cancel := context.WithCancel(t.Context())
		snd, err := transfer.Dial(transfer.WithLink(ctx, toB), l.Addr(), transfer.Header{Key: "req/0/0", Kind: "recv"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			chunk := make([]byte, 1<<20)
			var err error
			for err == nil {
				_, err = snd.Write(chunk)
			}
			done <- err
		}()
		// Stuck: the bytes written stop growing (the socket buffers are
		// full), polled under a deadline.
		deadline := time.Now().Add(20 * time.Second)
		for last := int64(-1); ; {
			time.Sleep(200 * time.Millisecond) // polling the meter, with a deadline
			n := snd.Meter().Stats().Bytes
			if n == last && n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("secure=%v: the sender never blocked (%d bytes written)", secure, n)
			}
			last = n
		}
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("secure=%v: the stuck sender stopped with %v; want the context's end", secure, err)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("secure=%v: the stuck sender did not stop within 3 s of its cancel", secure)
		}
		if s := <-accepted; s != nil {
			_ = s.Close()
		}
	}
}

// The header leaves at Dial, plain or sealed: the receiver has the stream,
// its kind and meta, before the sender writes a byte of body, so that it
// prepares while the sender starts its source (a zfs receive reads its
// dataset while the source's zfs send starts, inside a switch's downtime).
func TestHeaderArrivesBeforeTheBody(t *testing.T) {
	c := newCluster(t)
	for _, secure := range []bool{false, true} {
		t.Run(fmt.Sprintf("secure=%v", secure), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			toB, fromA, l := c.aToB(t, secure)
			type accepted struct {
				s   *transfer.Stream
				err error
			}
			got := make(chan accepted, 1)
			go func() { // the handshake, if any, needs both ends
				s, err := l.Accept(transfer.WithLink(ctx, fromA))
				got <- accepted{s, err}
			}()
			snd, err := transfer.Dial(transfer.WithLink(ctx, toB), l.Addr(),
				transfer.Header{Key: "req/0/0", Kind: "recv", Meta: map[string]string{"snap": "7"}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer snd.Close()
			a := <-got // no body is written: Accept returns on the header alone
			if a.err != nil {
				t.Fatalf("accept before any body: %v", a.err)
			}
			s := a.s
			defer s.Close()
			if s.Kind != "recv" || s.Meta["snap"] != "7" {
				t.Fatalf("header %q %v; want recv with snap 7", s.Kind, s.Meta)
			}
		})
	}
}
