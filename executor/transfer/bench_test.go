package transfer_test

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/drovehq/drove/executor/nodeid"
	"github.com/drovehq/drove/executor/transfer"
)

// BenchmarkStream measures one stream's throughput over loopback, plain
// and over TLS 1.3 with node certificates: the cost of encryption alone,
// without ZFS (test/bench/zfs measures it with ZFS on both ends).
func BenchmarkStream(b *testing.B) {
	ids, err := nodeid.Bundle(b.TempDir(), "a", "b")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		send, recv transfer.Link
	}{
		{"plain", transfer.Link{}, transfer.Link{}},
		{"tls", transfer.Link{Identity: ids["a"], Peer: "b"}, transfer.Link{Identity: ids["b"], Peer: "a"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			const size = 64 << 20
			chunk := make([]byte, 1<<20)
			b.SetBytes(size)
			for b.Loop() {
				l, err := transfer.Listen("127.0.0.1:0", "req/0/0", "")
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				done := make(chan error, 1)
				go func() {
					s, err := l.Accept(transfer.WithLink(ctx, tc.recv))
					if err != nil {
						done <- err
						return
					}
					// Into a pipe, as into zfs receive: plain streams
					// splice, TLS ones decrypt and write whole frames.
					pr, pw, err := os.Pipe()
					if err != nil {
						done <- err
						return
					}
					drained := make(chan struct{})
					go func() { _, _ = io.Copy(io.Discard, pr); close(drained) }()
					_, err = s.WriteTo(pw)
					_ = pw.Close()
					<-drained
					_ = pr.Close()
					_ = s.Reply(transfer.Reply{OK: true})
					done <- err
				}()
				snd, err := transfer.Dial(transfer.WithLink(ctx, tc.send), l.Addr(), transfer.Header{Key: "req/0/0", Kind: "recv"}, nil)
				if err != nil {
					b.Fatal(err)
				}
				for sent := 0; sent < size; sent += len(chunk) {
					if _, err := snd.Write(chunk); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := snd.Finish(); err != nil {
					b.Fatal(err)
				}
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				_ = l.Close()
			}
		})
	}
}
