package transfer

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// magic opens every stream; a peer that does not send it is not Drove.
const magic = "DROVE-XFER/1\n"

// chunkSize is the largest frame a sender writes.
const chunkSize = 256 << 10

// readBuffer is the receiver's read buffer (see open).
const readBuffer = 64 << 10

// Header opens a stream: which move (Key, Token), what the stream is for
// (Kind) and its parameters (Meta).
type Header struct {
	Key   string            `json:"key"`
	Token string            `json:"token,omitempty"`
	Kind  string            `json:"kind"`
	Meta  map[string]string `json:"meta,omitempty"`
}

// Reply ends a stream: the receiver's verdict.
type Reply struct {
	OK    bool              `json:"ok"`
	Error string            `json:"error,omitempty"`
	Meta  map[string]string `json:"meta,omitempty"`
}

// Err is the reply as an error: nil when OK.
func (r Reply) Err() error {
	if r.OK {
		return nil
	}
	return fmt.Errorf("transfer: receiver: %s", r.Error)
}

// Listener accepts the streams of one move.
type Listener struct {
	ln         net.Listener
	key, token string
	closeOnce  sync.Once
}

// Listen listens on addr ("host:port"; port 0 picks one) for the streams of
// the move named key; streams with another key or token are refused. An
// empty token means the Link's per-move token (none on a plain link).
// Accept's context says whether streams must come over TLS (see Link).
func Listen(addr, key, token string) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("transfer: listen %s: %w", addr, err)
	}
	return &Listener{ln: ln, key: key, token: token}, nil
}

// Addr is where the listener listens, as "host:port".
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Close stops listening; streams already accepted go on.
func (l *Listener) Close() error {
	var err error
	l.closeOnce.Do(func() { err = l.ln.Close() })
	return err
}

// headerTimeout bounds reading a header: a peer that connects and says
// nothing must not hold the accept loop.
const headerTimeout = 10 * time.Second

// Accept waits for the next stream of this move. Connections that are not
// this package's protocol, or carry another key, are answered and dropped.
// It returns ErrClosed after Close and ctx.Err() when ctx ends. Ending ctx
// also cuts the stream returned, as it does a Sender's: a receiver that
// stops must not leave its consumer reading a stream that goes on.
func (l *Listener) Accept(ctx context.Context) (*Stream, error) {
	stop := context.AfterFunc(ctx, func() { _ = l.Close() })
	defer stop()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, net.ErrClosed) {
				return nil, ErrClosed
			}
			return nil, fmt.Errorf("transfer: accept: %w", err)
		}
		s, err := l.open(ctx, c)
		if err != nil {
			if f := LinkOf(ctx).Refused; f != nil && errors.Is(err, ErrPeer) {
				f(fmt.Errorf("from %s: %w", c.RemoteAddr(), err))
			}
			_ = c.Close()
			continue // a stranger, an impostor or a stale sender; keep serving this move
		}
		s.stop = context.AfterFunc(ctx, func() { _ = c.Close() })
		return s, nil
	}
}

func (l *Listener) open(ctx context.Context, raw net.Conn) (*Stream, error) {
	link := LinkOf(ctx)
	c, err := link.server(ctx, raw)
	if err != nil {
		return nil, err
	}
	token := l.token
	if token == "" {
		token = link.token(l.key)
	}
	_ = c.SetReadDeadline(time.Now().Add(headerTimeout))
	// A buffer smaller than a frame: bufio reads a body into the caller's
	// slice directly whenever that slice is at least the buffer's size
	// and the buffer is empty, so most of a body is copied once, not twice.
	br := bufio.NewReaderSize(c, readBuffer)
	m := make([]byte, len(magic))
	if _, err := io.ReadFull(br, m); err != nil || string(m) != magic {
		return nil, ErrProtocol
	}
	line, err := br.ReadBytes('\n')
	if err != nil {
		return nil, ErrProtocol
	}
	var h Header
	if err := json.Unmarshal(line, &h); err != nil {
		return nil, ErrProtocol
	}
	s := &Stream{Header: h, conn: c, br: br, meter: NewMeter()}
	if h.Key != l.key || subtle.ConstantTimeCompare([]byte(h.Token), []byte(token)) != 1 {
		_ = s.Reply(Reply{Error: fmt.Sprintf("%v: this listener serves %q", ErrMismatch, l.key)})
		return nil, ErrMismatch
	}
	_ = c.SetReadDeadline(time.Time{})
	return s, nil
}

// Stream is the receiving end of one stream: Read gives the body, then
// Reply answers.
type Stream struct {
	Header
	conn    net.Conn
	br      *bufio.Reader
	left    int // bytes left in the current frame
	done    bool
	meter   *Meter
	replied bool
	stop    func() bool // unties the stream from Accept's ctx
}

// Meter counts the body bytes read so far.
func (s *Stream) Meter() *Meter { return s.meter }

// Read reads the body; it returns io.EOF at the sender's end marker and
// ErrCut if the connection ends before it.
func (s *Stream) Read(p []byte) (int, error) {
	if err := s.header(); err != nil {
		return 0, err
	}
	if len(p) > s.left {
		p = p[:s.left]
	}
	n, err := s.br.Read(p)
	s.left -= n
	s.meter.Add(n)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return n, fmt.Errorf("%w: %w", ErrCut, err)
	}
	return n, nil
}

// header reads the next frame's header when the last frame is done; it
// gives io.EOF at the end marker.
func (s *Stream) header() error {
	if s.done {
		return io.EOF
	}
	if s.left > 0 {
		return nil
	}
	var n [4]byte
	if _, err := io.ReadFull(s.br, n[:]); err != nil {
		return fmt.Errorf("%w: %w", ErrCut, err)
	}
	s.left = int(binary.BigEndian.Uint32(n[:]))
	if s.left == 0 {
		s.done = true
		return io.EOF
	}
	if s.left > chunkSize {
		return ErrProtocol
	}
	return nil
}

// WriteTo writes the rest of the body to w, as Read would give it. When w
// is an *os.File (the pipe into zfs receive), bodies go from the socket
// to it with splice(2), never through this process's memory: a move is
// CPU-bound on a small machine, and that saves two copies of every byte.
func (s *Stream) WriteTo(w io.Writer) (int64, error) {
	f, ok := w.(*os.File)
	if !ok {
		return io.Copy(w, struct{ io.Reader }{s})
	}
	if _, tcp := s.conn.(*net.TCPConn); !tcp {
		return s.writeFrames(f)
	}
	var total int64
	for {
		if s.done {
			return total, nil
		}
		if s.left == 0 {
			var n [4]byte
			if err := s.readHeader(n[:]); err != nil {
				return total, fmt.Errorf("%w: %v", ErrCut, err)
			}
			s.left = int(binary.BigEndian.Uint32(n[:]))
			if s.left == 0 {
				s.done = true
				return total, nil
			}
			if s.left > chunkSize {
				return total, ErrProtocol
			}
		}
		var n int64
		var err error
		if b := s.br.Buffered(); b > 0 {
			// What the buffer already holds goes first, by a plain write.
			buf, _ := s.br.Peek(min(b, s.left))
			var k int
			k, err = f.Write(buf)
			_, _ = s.br.Discard(k)
			n = int64(k)
		} else {
			lr := &io.LimitedReader{R: s.conn, N: int64(s.left)}
			n, err = f.ReadFrom(lr)
			if err == nil && n < int64(s.left) {
				err = io.ErrUnexpectedEOF // the connection ended mid-frame
			}
		}
		s.left -= int(n)
		s.meter.Add(int(n))
		total += n
		if err != nil {
			return total, fmt.Errorf("%w: %v", ErrCut, err)
		}
	}
}

// writeFrames is WriteTo for a stream that cannot splice, a secure one:
// each frame is written whole, in one write(2). A secure frame's body
// is its own sealed record, opened in place and written from there
// (seal.go). Written a record (16 KiB) at a time, the pipe to zfs
// receive would wake the receiving process 64,000 times a GiB; on a
// small machine those wakeups, not the copies, bound a move's
// throughput (executor/zfs/cli.go).
func (s *Stream) writeFrames(w io.Writer) (int64, error) {
	buf := make([]byte, chunkSize+sealOverhead) // a frame's body, sealed, is never larger
	var total int64
	for {
		body, err := s.frame(buf)
		if len(body) > 0 {
			k, werr := w.Write(body)
			total += int64(k)
			if werr != nil {
				return total, fmt.Errorf("%w: %v", ErrCut, werr)
			}
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// frame reads the next frame's body into buf: when the stream is sealed
// and the body is one record (a Sender writes it so), that record opened
// in place. It gives io.EOF at the end marker.
func (s *Stream) frame(buf []byte) ([]byte, error) {
	if sc, sealed := s.conn.(*sealedConn); sealed && s.left == 0 {
		if err := s.header(); err != nil {
			return nil, err
		}
		if body, ok, err := s.sealedBody(sc, buf); ok || err != nil {
			return body, err
		}
	}
	n, err := s.Read(buf) // the frame's header when due, then its body
	for err == nil && s.left > 0 {
		var k int
		k, err = s.Read(buf[n:])
		n += k
	}
	return buf[:n], err
}

// sealedBody is the frame's body as its own record, opened in place in
// buf, when nothing of it was read yet (ok).
func (s *Stream) sealedBody(sc *sealedConn, buf []byte) ([]byte, bool, error) {
	if s.br.Buffered() > 0 {
		return nil, false, nil
	}
	body, ok, err := sc.recordInto(buf)
	switch {
	case err != nil:
		return nil, true, fmt.Errorf("%w: %w", ErrCut, err)
	case !ok:
		return nil, false, nil
	case len(body) != s.left:
		return nil, true, ErrProtocol
	}
	s.left = 0
	s.meter.Add(len(body))
	return body, true, nil
}

// readHeader fills p from the buffer, then the connection, reading no
// further than p: the body after it is left for splice.
func (s *Stream) readHeader(p []byte) error {
	for i := range p {
		if s.br.Buffered() == 0 {
			_, err := io.ReadFull(s.conn, p[i:])
			return err
		}
		b, err := s.br.ReadByte()
		if err != nil {
			return err
		}
		p[i] = b
	}
	return nil
}

// Reply answers the sender and closes the stream. A second call is a no-op.
func (s *Stream) Reply(r Reply) error {
	if s.replied {
		return nil
	}
	s.replied = true
	defer s.conn.Close()
	if s.stop != nil {
		s.stop()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_ = s.conn.SetWriteDeadline(time.Now().Add(headerTimeout))
	if _, err = s.conn.Write(append(b, '\n')); err != nil {
		return err
	}
	if s.done {
		return nil
	}
	// Closing with bytes unread would reset the connection, and the
	// reset destroys what of the reply the socket has not sent yet: the
	// sender sees the stream only "cut". So the rest is read first, for
	// at most headerTimeout.
	_ = s.conn.SetReadDeadline(time.Now().Add(headerTimeout))
	if r.OK {
		// A question (a stream with no body) is answered without
		// reading its end marker, which follows the header at once; a
		// checksum's answer carries its block sums, megabytes that
		// leave the socket after the answer's write returns.
		_, _ = io.Copy(io.Discard, struct{ io.Reader }{s})
		return nil
	}
	// Refused mid-body (a receive that failed: no space, a bad stream):
	// the sender may still be writing. It reads the reply as it writes
	// and hangs up; until then the rest is read and dropped.
	_, _ = io.Copy(io.Discard, s.conn)
	return nil
}

// Close drops the stream without a reply (the sender sees ErrCut).
func (s *Stream) Close() error {
	s.replied = true
	if s.stop != nil {
		s.stop()
	}
	return s.conn.Close()
}

// Sender is the sending end of one stream: Write the body, then Finish.
type Sender struct {
	conn  net.Conn
	bw    *bufio.Writer
	lim   *Limiter
	meter *Meter
	ctx   context.Context
	stop  func() bool
	// reply is the receiver's reply line, read from the start: a
	// receiver that fails mid-body replies at once, and Write stops
	// with its reason rather than write on into a closed stream.
	reply chan replyLine
}

type replyLine struct {
	line []byte
	err  error
}

// replyGrace is how long a Write that failed waits for the reply that
// says why (it is usually on its way: the receiver replies, then stops).
const replyGrace = 2 * time.Second

// Dial opens a stream to addr with header h. The limiter (nil: none) paces
// the body; the returned sender's Meter counts it. Cancelling ctx cuts the
// stream. When ctx carries a secure Link, the stream is TLS 1.3 and Dial
// returns an error wrapping ErrPeer unless the listener proves to be the
// Link's Peer; an empty h.Token is then filled with the per-move token.
func Dial(ctx context.Context, addr string, h Header, lim *Limiter) (*Sender, error) {
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("transfer: dial %s: %w", addr, err)
	}
	link := LinkOf(ctx)
	c, err := link.client(ctx, raw)
	if err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("transfer: dial %s: %w", addr, err)
	}
	if h.Token == "" {
		h.Token = link.token(h.Key)
	}
	b, err := json.Marshal(h)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	s := &Sender{conn: c, bw: bufio.NewWriterSize(c, 16<<10), lim: lim, meter: NewMeter(), ctx: ctx,
		reply: make(chan replyLine, 1)}
	// Cancelling cuts the socket itself: a TLS close would first send its
	// alert, behind a write blocked on a receiver that reads nothing.
	s.stop = context.AfterFunc(ctx, func() { _ = raw.Close() })
	go func() {
		line, err := bufio.NewReader(c).ReadBytes('\n')
		s.reply <- replyLine{line, err}
	}()
	if _, err := s.bw.WriteString(magic); err != nil {
		s.Close()
		return nil, err
	}
	if _, err := s.bw.Write(append(b, '\n')); err != nil {
		s.Close()
		return nil, err
	}
	// The header leaves now, not with the first frame: the receiver
	// prepares (a receive reads its dataset's state) while the sender
	// starts its source, which for zfs send takes milliseconds, inside a
	// switch's downtime when the body is a final delta.
	if err := s.flush(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// flush writes what the sender holds: the header, an end marker.
func (s *Sender) flush() error {
	if err := s.bw.Flush(); err != nil {
		return err
	}
	return flushConn(s.conn)
}

// Meter counts the body bytes written so far.
func (s *Sender) Meter() *Meter { return s.meter }

// Write sends p as body, in frames, each admitted by the limiter first.
func (s *Sender) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), chunkSize)
		if s.lim != nil && s.lim.Rate() > 0 {
			// Smaller frames under a limit keep the pace smooth.
			n = min(n, 32<<10)
		}
		if err := s.lim.WaitN(s.ctx, n); err != nil {
			return written, err
		}
		select {
		case r := <-s.reply:
			s.reply <- r // for Finish
			return written, s.early(r, nil)
		default:
		}
		// The frame leaves at once, header and body in one writev: no
		// copy of the body into a buffer (a move is CPU-bound on a small
		// machine), and paced bytes do not sit in a buffer, which would
		// make the measured rate lag the limit.
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(n))
		bufs := net.Buffers{hdr[:], p[:n]}
		if _, err := bufs.WriteTo(s.conn); err != nil {
			return written, s.writeFailed(err)
		}
		if err := flushConn(s.conn); err != nil {
			return written, s.writeFailed(err)
		}
		s.meter.Add(n)
		written += n
		p = p[n:]
	}
	return written, nil
}

// writeFailed is a failed write's error: the receiver's reason when its
// reply comes within replyGrace, else the stream cut.
func (s *Sender) writeFailed(err error) error {
	if s.ctx.Err() != nil {
		return s.ctx.Err()
	}
	t := time.NewTimer(replyGrace)
	defer t.Stop()
	select {
	case r := <-s.reply:
		s.reply <- r
		return s.early(r, err)
	case <-t.C:
		return s.cut(err)
	}
}

// early is the error of a reply that came before the body's end: the
// receiver's refusal, or the cut (werr, else the read's error).
func (s *Sender) early(r replyLine, werr error) error {
	var rep Reply
	if r.err == nil && json.Unmarshal(r.line, &rep) == nil && !rep.OK {
		return fmt.Errorf("%w: %w", ErrCut, rep.Err())
	}
	if werr == nil {
		werr = r.err
	}
	if werr == nil {
		werr = ErrProtocol // a reply of success before the body's end
	}
	return s.cut(werr)
}

func (s *Sender) cut(err error) error {
	if s.ctx.Err() != nil {
		return s.ctx.Err()
	}
	return fmt.Errorf("%w: %v", ErrCut, err)
}

// Finish writes the end marker and waits for the receiver's reply. The
// stream is closed afterwards. The returned error is a transport error;
// a refusal by the receiver is in the Reply (see Reply.Err).
func (s *Sender) Finish() (Reply, error) {
	defer s.Close()
	var end [4]byte
	if _, err := s.bw.Write(end[:]); err != nil {
		return Reply{}, s.writeFailed(err)
	}
	if err := s.flush(); err != nil {
		return Reply{}, s.writeFailed(err)
	}
	rl := <-s.reply // the conn's close (ctx) ends the read
	if rl.err != nil {
		return Reply{}, s.cut(rl.err)
	}
	var r Reply
	if err := json.Unmarshal(rl.line, &r); err != nil {
		return Reply{}, ErrProtocol
	}
	return r, nil
}

// Close drops the stream; the receiver sees ErrCut.
func (s *Sender) Close() {
	s.stop()
	_ = s.conn.Close()
}

// Request opens a stream with no body and returns the reply: a question.
func Request(ctx context.Context, addr string, h Header) (Reply, error) {
	s, err := Dial(ctx, addr, h, nil)
	if err != nil {
		return Reply{}, err
	}
	return s.Finish()
}
