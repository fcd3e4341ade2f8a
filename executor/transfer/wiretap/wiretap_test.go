package wiretap_test

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/drovehq/drove/executor/transfer/wiretap"
)

// A tap forwards both ways, keeps what the client sent as sent, and
// forwards it as altered.
func TestTapKeepsWhatWasSentAndForwardsItAltered(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c) // to the client's half-close
		_, _ = c.Write([]byte("ok"))
		got <- b
	}()
	tap := wiretap.New(t, ln.Addr().String(), func(at int, b []byte) {
		for i := range b {
			if at+i == 3 {
				b[i] = 'X'
			}
		}
	})
	c, err := net.Dial("tcp", tap.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("abcdef")); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	reply, err := io.ReadAll(c)
	if err != nil || string(reply) != "ok" {
		t.Fatalf("reply %q, %v; want the server's ok back through the tap", reply, err)
	}
	if b := <-got; string(b) != "abcXef" {
		t.Fatalf("the server got %q, want the altered abcXef", b)
	}
	if b := tap.Captured(); !bytes.Equal(b, []byte("abcdef")) {
		t.Fatalf("the tap kept %q, want what the client sent", b)
	}
}
