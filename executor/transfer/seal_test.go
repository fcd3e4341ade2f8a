package transfer_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/executor/transfer"
	"github.com/drovehq/drove/executor/transfer/wiretap"
)

// flipper forwards a sender's bytes to to, flipping one bit of the byte at
// offset at: an attacker on the wire altering a record.
func flipper(t *testing.T, to string, at int) string {
	return wiretap.New(t, to, func(off int, b []byte) {
		if at >= off && at < off+len(b) {
			b[at-off] ^= 0x10
		}
	}).Addr()
}

// An altered byte anywhere in a secure stream's body stops the stream
// there: the receiver never hands on a byte that did not come from the
// sender as it sent it, by either way of reading (into a pipe, as zfs
// receive takes it, and by Read).
func TestAnAlteredRecordCutsTheStream(t *testing.T) {
	c := newCluster(t)
	body := markedBody()
	for _, into := range []string{"pipe", "read"} {
		for _, at := range []int{100 << 10, 600 << 10} {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			toB, fromA, l := c.aToB(t, true)
			type result struct {
				got []byte
				err error
			}
			done := make(chan result, 1)
			go func() {
				s, err := l.Accept(transfer.WithLink(ctx, fromA))
				if err != nil {
					done <- result{err: err}
					return
				}
				got, err := receive(s, into)
				_ = s.Reply(transfer.Reply{OK: err == nil})
				done <- result{got, err}
			}()
			serr := send(ctx, flipper(t, l.Addr(), at), toB, body)
			r := <-done
			cancel()
			if !errors.Is(r.err, transfer.ErrSealed) || !errors.Is(r.err, transfer.ErrCut) {
				t.Fatalf("%s, byte %d altered: the receiver's error is %v, want ErrCut and ErrSealed", into, at, r.err)
			}
			if !bytes.HasPrefix(body, r.got) {
				t.Fatalf("%s, byte %d altered: the receiver handed on %d bytes that are not the body's start", into, at, len(r.got))
			}
			if serr == nil {
				t.Fatalf("%s, byte %d altered: the sender was told the stream arrived", into, at)
			}
		}
	}
}

// receive reads s's body into a pipe (as zfs receive takes it) or by Read.
func receive(s *transfer.Stream, into string) ([]byte, error) {
	if into == "read" {
		return io.ReadAll(s)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	got := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(pr); got <- b }()
	_, err = s.WriteTo(pw)
	_ = pw.Close()
	b := <-got
	_ = pr.Close()
	return b, err
}

// An executor from before sealed records is refused by name at either
// end, and the receiver tells the operator of it.
func TestAnOlderExecutorIsRefusedByName(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	// An older receiver: TLS with no application protocol.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			return
		}
		defer raw.Close()
		tc := tls.Server(raw, c.ids["b"].ServerConfig("a"))
		if tc.HandshakeContext(ctx) == nil {
			_, _ = io.Copy(io.Discard, tc)
		}
	}()
	_, err = transfer.Dial(transfer.WithLink(ctx, transfer.Link{Identity: c.ids["a"], Peer: "b"}), ln.Addr().String(),
		transfer.Header{Key: "req/0/0", Kind: "recv"}, nil)
	if !errors.Is(err, transfer.ErrPeer) || !strings.Contains(err.Error(), "older transfer protocol") {
		t.Fatalf("dialling an older receiver: %v, want ErrPeer naming the older protocol", err)
	}

	// An older sender.
	_, fromA, l := c.aToB(t, true)
	refused := make(chan error, 1)
	fromA.Refused = func(err error) { refused <- err }
	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	go func() { _, _ = l.Accept(transfer.WithLink(actx, fromA)) }()
	raw, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tc := tls.Client(raw, c.ids["a"].ClientConfig("b"))
	_ = tc.HandshakeContext(ctx)
	select {
	case err := <-refused:
		if !strings.Contains(err.Error(), "older transfer protocol") {
			t.Fatalf("the receiver refused an older sender saying %v, want the older protocol named", err)
		}
	case <-ctx.Done():
		t.Fatal("the receiver did not report the older sender")
	}
}

// A receiver may refuse mid-body while its copy into zfs receive still
// reads the stream: the refusal's drain and the copy read at once, as
// they may on any connection (the race detector watches this one).
func TestARefusalDrainsWhileTheCopyReads(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	toB, fromA, l := c.aToB(t, true)
	refused := make(chan error, 1)
	go func() {
		s, err := l.Accept(transfer.WithLink(ctx, fromA))
		if err != nil {
			refused <- err
			return
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			refused <- err
			return
		}
		go func() { _, _ = io.Copy(io.Discard, pr) }()
		copied := make(chan struct{})
		go func() { defer close(copied); _, _ = s.WriteTo(pw) }()
		for s.Meter().Stats().Bytes < 1<<20 && ctx.Err() == nil {
			time.Sleep(time.Millisecond) // polling the copy's progress, with the test's deadline
		}
		refused <- s.Reply(transfer.Reply{Error: "no space left"})
		<-copied
		_ = pw.Close()
	}()
	snd, err := transfer.Dial(transfer.WithLink(ctx, toB), l.Addr(), transfer.Header{Key: "req/0/0", Kind: "recv"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, werr := snd.Write(bytes.Repeat(markedBody(), 64))
	snd.Close() // as a driver does when its write fails
	if err := <-refused; err != nil {
		t.Fatal(err)
	}
	if werr == nil || !strings.Contains(werr.Error(), "no space left") {
		t.Fatalf("the sender saw %v, want the refusal", werr)
	}
}
