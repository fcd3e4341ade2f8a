package transfer

import (
	"bufio"
	"crypto/aes"
	"crypto/cipher"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// A secure stream's bytes, once TLS 1.3 has authenticated both nodes,
// travel in sealed records of up to a frame (256 KiB) each, not in TLS
// records: TLS caps a record at 16 KiB, and its API copies every byte
// once more each way (into the socket batch on the sender, out of its
// record buffer on the receiver). On a 2-core node, where the move
// shares the CPU with the ZFS daemon, those copies and the record
// overhead cost a fifth of the stream's CPU (issue 30: moves at full
// speed with encryption on). A record is sealed straight into the
// socket's batch and opened in place in the receiver's buffer, and the
// frame goes from there into the pipe to `zfs receive`.
//
// A record is a 4-byte big-endian plaintext length n, then n+16 bytes:
// AES-128-GCM of the plaintext with the length as additional data and
// the record's number in its direction (from 0) as the nonce. Each
// direction has its own key, exported from the TLS session (RFC 8446
// section 7.5), so no key and nonce pair is ever used twice: a record
// altered, dropped, replayed, reordered or taken from another stream
// fails to open, and the stream fails (ErrSealed). Truncation is the
// stream protocol's own concern, as before: a body ends only with its
// end marker, sealed like the rest.
//
// The switch from TLS to records must not lose a byte that TLS read
// ahead: the server's TLS sends nothing after the handshake (session
// tickets are off), and the client waits for the server's first record
// (sealReady) before it writes, so neither side's TLS holds a byte of
// the other's records.

// sealOverhead is what sealing adds to a record: GCM's tag.
const sealOverhead = 16

// maxRecord is the largest plaintext a record carries: a frame's body,
// so a receiver opens each body whole, in place.
const maxRecord = chunkSize

// sealReady is the server's first record: records from here on.
const sealReady = "sealed\n"

// The exporter labels of each direction's key.
const (
	labelClientWrite = "EXPORTER-drove-transfer client write"
	labelServerWrite = "EXPORTER-drove-transfer server write"
)

// sealer seals or opens one direction's records, numbering them.
type sealer struct {
	aead cipher.AEAD
	seq  uint64
}

func newSealer(cs tls.ConnectionState, label string) (*sealer, error) {
	key, err := cs.ExportKeyingMaterial(label, nil, 16)
	if err != nil {
		return nil, err
	}
	return keyedSealer(key)
}

func keyedSealer(key []byte) (*sealer, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: g}, nil
}

func (s *sealer) nonce() []byte {
	var n [12]byte
	binary.BigEndian.PutUint64(n[4:], s.seq)
	s.seq++
	return n[:]
}

// seal appends p's record to dst.
func (s *sealer) seal(dst, p []byte) []byte {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(p)))
	dst = append(dst, hdr[:]...)
	return s.aead.Seal(dst, s.nonce(), p, hdr[:])
}

// open opens a record's sealed part in place; hdr is its length.
func (s *sealer) open(hdr, sealed []byte) ([]byte, error) {
	p, err := s.aead.Open(sealed[:0], s.nonce(), sealed, hdr)
	if err != nil {
		return nil, ErrSealed
	}
	return p, nil
}

// sealedConn is a connection's bytes as sealed records. Reads and writes
// may run at once (a sender reads the reply while it writes); each side
// has its own state. Writes are held until flush once batch is called:
// a frame's header and body leave in one write(2).
type sealedConn struct {
	net.Conn

	wmu     sync.Mutex
	out     *sealer
	batched bool
	buf     []byte // sealed records not yet written

	rmu   sync.Mutex // reads may come at once, as on any net.Conn
	in    *sealer
	br    *bufio.Reader // the raw connection's
	rec   []byte        // Read's record, opened in place
	plain []byte        // its plaintext not yet read
}

// readAhead is the raw connection's read buffer: enough for a record's
// header and a small record whole, little to copy out of for a frame's
// body, which is read past it straight into the record's buffer.
const readAhead = 4 << 10

// batchMax is what a sealedConn holds before it writes: a frame's
// header and body, sealed.
const batchMax = chunkSize + 1024

func newSealedConn(raw net.Conn, cs tls.ConnectionState, client bool) (*sealedConn, error) {
	wl, rl := labelServerWrite, labelClientWrite
	if client {
		wl, rl = rl, wl
	}
	out, err := newSealer(cs, wl)
	if err != nil {
		return nil, err
	}
	in, err := newSealer(cs, rl)
	if err != nil {
		return nil, err
	}
	return &sealedConn{Conn: raw, out: out, in: in, br: bufio.NewReaderSize(raw, readAhead),
		rec: make([]byte, maxRecord+sealOverhead)}, nil
}

func (c *sealedConn) batch() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.batched, c.buf = true, make([]byte, 0, batchMax)
}

// Write seals p in records of at most maxRecord.
func (c *sealedConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	n := 0
	for len(p) > 0 {
		k := min(len(p), maxRecord)
		if c.batched && len(c.buf)+k+4+sealOverhead > batchMax {
			if err := c.flushLocked(); err != nil {
				return n, err
			}
		}
		c.buf = c.out.seal(c.buf, p[:k])
		n, p = n+k, p[k:]
		if !c.batched {
			if err := c.flushLocked(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// Flush writes the records held.
func (c *sealedConn) Flush() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.flushLocked()
}

func (c *sealedConn) flushLocked() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}

// Close sends what is held, unless a write is under way: a write blocked
// on a receiver that reads nothing holds the lock, and closing the
// socket under it is what frees it (a cancelled stream).
func (c *sealedConn) Close() error {
	if c.wmu.TryLock() {
		_ = c.flushLocked()
		c.wmu.Unlock()
	}
	return c.Conn.Close()
}

// Read gives the plaintext of the records in order. A receiver that
// refuses mid-body drains the stream while its copy may still read.
func (c *sealedConn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for len(c.plain) == 0 {
		pt, err := c.record(c.rec)
		if err != nil {
			return 0, err
		}
		c.plain = pt
	}
	n := copy(p, c.plain)
	c.plain = c.plain[n:]
	return n, nil
}

// recordInto reads the next record into buf (at least maxRecord +
// sealOverhead long) and opens it there, when the next byte read starts
// a record; ok is false while Read holds part of one.
func (c *sealedConn) recordInto(buf []byte) (pt []byte, ok bool, err error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if len(c.plain) > 0 {
		return nil, false, nil
	}
	pt, err = c.record(buf)
	return pt, true, err
}

// record reads the next record into buf and opens it in place. A
// connection that ends between records gives io.EOF.
func (c *sealedConn) record(buf []byte) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n > maxRecord {
		return nil, fmt.Errorf("%w: a record of %d bytes", ErrSealed, n)
	}
	sealed := buf[:n+sealOverhead]
	if _, err := io.ReadFull(c.br, sealed); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return c.in.open(hdr[:], sealed)
}

// sealClient switches a client's TLS connection, handshake done, to
// records: it waits for the server's sealReady first.
func sealClient(raw net.Conn, tc *tls.Conn, deadline time.Time) (*sealedConn, error) {
	c, err := newSealedConn(raw, tc.ConnectionState(), true)
	if err != nil {
		return nil, err
	}
	_ = raw.SetReadDeadline(deadline)
	defer raw.SetReadDeadline(time.Time{})
	p, err := c.record(c.rec)
	if err != nil {
		return nil, fmt.Errorf("transfer: switching to sealed records: %w", err)
	}
	if string(p) != sealReady {
		return nil, fmt.Errorf("%w: the server's first record is %q", ErrSealed, p)
	}
	c.batch()
	return c, nil
}

// sealServer switches a server's TLS connection, handshake done, to
// records, and says so to the client.
func sealServer(raw net.Conn, tc *tls.Conn) (*sealedConn, error) {
	c, err := newSealedConn(raw, tc.ConnectionState(), false)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte(sealReady)); err != nil {
		return nil, err
	}
	return c, nil
}
