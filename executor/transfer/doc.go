// Package transfer carries one move's data from the source node's executor
// to the target node's executor over TCP: the target listens (Listen), the
// source dials (Dial) and opens one stream per piece of work (a send, a
// question), each starting with a header that names the opcode's key so a
// listener only serves the move it was made for — KubeVirt's decentralised
// migration, where the two flows meet by a unique key and either may start
// first.
//
// Invariants:
//
//   - A stream's body is framed in chunks and ends with an explicit end
//     marker, so a receiver can tell a complete body from a cut connection:
//     a cut always surfaces as an error (ErrCut), never as a short, clean
//     EOF that would let a truncated `zfs send` stream look whole.
//
//   - Every stream ends with exactly one Reply from the receiver; the sender
//     learns the receiver's verdict (or its error text) from it. The reply
//     arrives whole: the receiver reads the stream to its end marker (a
//     refusal: until the sender hangs up) before it closes, since a close
//     with bytes unread resets the connection, and the reset drops what of
//     the reply the socket has not sent yet.
//
//   - Bytes are counted (Meter) after the rate limiter admitted them, so
//     rates reported for progress are what actually went on the wire. A
//     rate is measured over a whole window (2 s), or from the first frame
//     once 250 ms have passed: no shorter, so the limiter's saved burst
//     never reads as the rate.
//
//   - The Limiter's rate can change while a stream runs; the change applies
//     from the next chunk.
//
//   - A stream is protected by the Link its context carries (WithLink,
//     set by the executor for every driver call): TLS 1.3 both ways, each
//     end checking that the other's certificate names the node the move
//     names (nodeid), plus a per-move token derived from the cluster's
//     secret as a second factor. The handshake ends before the header is
//     sent, so a wrong peer never sees the move's key, token or data.
//     The stream then goes on in sealed records keyed from the TLS
//     session (seal.go): a record that fails to open cuts the stream
//     there (ErrSealed), and nothing after the last good one is read.
//     Without a Link streams are plain TCP: the executor allows that only
//     when told to, and says so in its log.
//
// The package is pure Go over net and crypto/tls; it knows nothing about
// ZFS.
package transfer
