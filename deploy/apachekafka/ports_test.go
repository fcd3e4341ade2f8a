package apachekafka

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortIsNoEphemeralOne: a node's port lies below the kernel's
// ephemeral range, so that no outgoing connection can hold it while the
// node restarts, and it is free.
func TestFreePortIsNoEphemeralOne(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		port, err := freePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if port < firstPort || port >= low {
			t.Fatalf("port %d, want one in [%d, %d)", port, firstPort, low)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", port, err)
		}
		ln.Close()
	}
}
