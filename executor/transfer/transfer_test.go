package transfer_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/drovehq/drove/executor/transfer"
)

func listen(t *testing.T) *transfer.Listener {
	t.Helper()
	l, err := transfer.Listen("127.0.0.1:0", "req/0/0", "tok")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestRoundTripAndReply(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	l := listen(t)
	body := make([]byte, 3<<20+17)
	_, _ = rand.Read(body)
	got := make(chan []byte, 1)
	go func() {
		s, err := l.Accept(ctx)
		if err != nil {
			got <- nil
			return
		}
		b, err := io.ReadAll(s)
		if err != nil || s.Kind != "recv" || s.Meta["snap"] != "2" {
			_ = s.Reply(transfer.Reply{Error: "bad"})
			got <- nil
			return
		}
		_ = s.Reply(transfer.Reply{OK: true, Meta: map[string]string{"n": "ok"}})
		got <- b
	}()
	snd, err := transfer.Dial(ctx, l.Addr(), transfer.Header{Key: "req/0/0", Token: "tok", Kind: "recv",
		Meta: map[string]string{"snap": "2"}}, transfer.NewLimiter(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(snd, bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	r, err := snd.Finish()
	if err != nil || r.Err() != nil || r.Meta["n"] != "ok" {
		t.Fatalf("Finish: %+v, %v", r, err)
	}
	if b := <-got; !bytes.Equal(b, body) {
		t.Fatalf("body differs: got %d bytes, want %d", len(b), len(body))
	}
	if st := snd.Meter().Stats(); st.Bytes != int64(len(body)) {
		t.Fatalf("meter counted %d bytes, want %d", st.Bytes, len(body))
	}
}

func TestCutStreamIsAnError(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	l := listen(t)
	readErr := make(chan error, 1)
	go func() {
		s, err := l.Accept(ctx)
		if err != nil {
			readErr <- err
			return
		}
		_, err = io.ReadAll(s)
		readErr <- err
	}()
	snd, err := transfer.Dial(ctx, l.Addr(), transfer.Header{Key: "req/0/0", Token: "tok", Kind: "recv"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snd.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	snd.Close() // no end marker
	if err := <-readErr; !errors.Is(err, transfer.ErrCut) {
		t.Fatalf("reading a cut stream: %v, want ErrCut", err)
	}
}

func TestWrongKeyIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	l := listen(t)
	accepted := make(chan string, 1)
	go func() {
		s, err := l.Accept(ctx)
		if err != nil {
			accepted <- "error: " + err.Error()
			return
		}
		accepted <- s.Key
		_ = s.Reply(transfer.Reply{OK: true})
	}()
	r, err := transfer.Request(ctx, l.Addr(), transfer.Header{Key: "other/0/0", Token: "tok", Kind: "hello"})
	if err == nil && r.Err() == nil {
		t.Fatalf("a stream of another move was accepted: %+v", r)
	}
	// The listener keeps serving its own move.
	if r, err := transfer.Request(ctx, l.Addr(), transfer.Header{Key: "req/0/0", Token: "tok", Kind: "hello"}); err != nil || !r.OK {
		t.Fatalf("own stream: %+v, %v", r, err)
	}
	if k := <-accepted; k != "req/0/0" {
		t.Fatalf("accepted %q", k)
	}
}

// TestRateLimitHolds50Mbit is the acceptance check: a 50 Mbit/s
// setting is held within 10 percent over a 20-second transfer on loopback,
// measured at the receiver. The rate is first set to something else and
// changed while the stream runs, as an operator's setting would be.
func TestRateLimitHolds50Mbit(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	l := listen(t)
	type result struct {
		n   int64
		dur time.Duration
		err error
	}
	res := make(chan result, 1)
	go func() {
		s, err := l.Accept(ctx)
		if err != nil {
			res <- result{err: err}
			return
		}
		buf := make([]byte, 64<<10)
		var n int64
		var first time.Time
		for {
			k, err := s.Read(buf)
			if k > 0 && first.IsZero() {
				first = time.Now()
			}
			n += int64(k)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				res <- result{err: err}
				return
			}
		}
		d := time.Since(first)
		_ = s.Reply(transfer.Reply{OK: true})
		res <- result{n: n, dur: d}
	}()
	lim := transfer.NewLimiter(transfer.MbitPerSecond(10))
	snd, err := transfer.Dial(ctx, l.Addr(), transfer.Header{Key: "req/0/0", Token: "tok", Kind: "recv"}, lim)
	if err != nil {
		t.Fatal(err)
	}
	lim.SetRate(transfer.MbitPerSecond(50))
	const seconds = 20
	want := transfer.MbitPerSecond(50)
	chunk := make([]byte, 1<<20)
	start := time.Now()
	for time.Since(start) < seconds*time.Second {
		if _, err := snd.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := snd.Finish(); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	got := float64(r.n) / r.dur.Seconds()
	t.Logf("measured %.2f Mbit/s over %s (%d bytes), limit 50 Mbit/s", got*8/1e6, r.dur.Round(time.Millisecond), r.n)
	if r.dur < 19*time.Second {
		t.Fatalf("transfer lasted %s, want about 20 s", r.dur)
	}
	if dev := (got - float64(want)) / float64(want); dev > 0.10 || dev < -0.10 {
		t.Fatalf("rate %.2f Mbit/s is %.1f%% off 50 Mbit/s", got*8/1e6, dev*100)
	}
}

// A stream written into a pipe (as into zfs receive) takes the splice
// path: the bytes, the count and a cut are the same as through Read.
func TestWriteToPipeSplices(t *testing.T) {
	for _, cut := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		l := listen(t)
		body := make([]byte, 5<<20+333) // several frames and a partial one
		_, _ = rand.Read(body)
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		piped := make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(pr); piped <- b }()
		type result struct {
			n   int64
			err error
		}
		done := make(chan result, 1)
		go func() {
			s, err := l.Accept(ctx)
			if err != nil {
				done <- result{err: err}
				return
			}
			n, err := s.WriteTo(pw)
			pw.Close()
			if st := s.Meter().Stats(); err == nil && st.Bytes != n {
				err = fmt.Errorf("meter counted %d of %d bytes", st.Bytes, n)
			}
			if err == nil {
				_ = s.Reply(transfer.Reply{OK: true})
			}
			done <- result{n, err}
		}()
		snd, err := transfer.Dial(ctx, l.Addr(), transfer.Header{Key: "req/0/0", Token: "tok", Kind: "recv"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		send := body
		if cut {
			send = body[:3<<20+5]
		}
		if _, err := io.Copy(snd, bytes.NewReader(send)); err != nil {
			t.Fatal(err)
		}
		if cut {
			snd.Close()
		} else if r, err := snd.Finish(); err != nil || r.Err() != nil {
			t.Fatalf("Finish: %+v, %v", r, err)
		}
		res, got := <-done, <-piped
		switch {
		case cut && !errors.Is(res.err, transfer.ErrCut):
			t.Errorf("cut stream: WriteTo returned %v, want ErrCut", res.err)
		case !cut && res.err != nil:
			t.Errorf("WriteTo: %v", res.err)
		case !cut && (!bytes.Equal(got, body) || res.n != int64(len(body))):
			t.Errorf("piped %d bytes (WriteTo said %d), want the %d sent", len(got), res.n, len(body))
		case cut && !bytes.Equal(got, send[:len(got)]):
			t.Errorf("the bytes piped before the cut differ from those sent")
		}
		cancel()
	}
}
