// Package wiretap is the tests' view of the wire between two nodes: a TCP
// forwarder to a fixed address that keeps every byte the client sent, as
// a capture on the wire would, and may change each piece before it goes
// on, as an attacker on the wire would. The transfer tests flip bits of
// sealed records through it; the zfs tests look for a dataset's plaintext
// in what a move sent.
package wiretap

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
)

// Tap forwards the connections made to Addr to the address it was made
// for. It stops with its test.
type Tap struct {
	ln    net.Listener
	alter func(at int, b []byte)
	mu    sync.Mutex
	seen  bytes.Buffer
	wg    sync.WaitGroup
}

// New starts a tap in front of to. alter, when set, is called with each
// piece of the client's bytes and its offset in them, and may change the
// piece in place before it is forwarded (what the tap keeps is the
// piece as sent).
func New(t testing.TB, to string, alter func(at int, b []byte)) *Tap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Tap{ln: ln, alter: alter}
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", to)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.wg.Add(2)
			go func() { defer p.wg.Done(); p.forward(up, c); _ = up.(*net.TCPConn).CloseWrite() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	return p
}

// Addr is where to connect to go through the tap.
func (p *Tap) Addr() string { return p.ln.Addr().String() }

// Captured is a copy of every byte clients have sent through the tap so
// far.
func (p *Tap) Captured() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Clone(p.seen.Bytes())
}

// forward copies the client's bytes upstream, kept and altered.
func (p *Tap) forward(up, c net.Conn) {
	buf, at := make([]byte, 32<<10), 0
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.keep(buf[:n])
			if p.alter != nil {
				p.alter(at, buf[:n])
			}
			at += n
			if _, werr := up.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Tap) keep(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen.Write(b)
}
