// Package nodeid gives each executor a node identity for the streams that
// carry moves between nodes: a small certificate authority (InitCA, Issue,
// Revoke; `drove ca init`, `drove ca issue NODE`, `drove ca revoke NODE`), node certificates that name
// their node, and the TLS 1.3 configurations both ends of a stream use to
// check that the peer is the node the move names (Identity).
//
// Invariants:
//
//   - A node certificate names exactly one node, in a URI SAN
//     drove://node/NAME (also its CommonName and, when NAME is a valid
//     host name, a DNS SAN, for people reading it). Only the URI SAN is
//     trusted: CommonNames are ignored by Go and DNS SANs could be issued
//     for a host by a CA that is not Drove's.
//   - Both ends verify the chain against the configured CA only (never the
//     system roots) and check the peer's name against the node the move
//     names, so a certificate of another node of the same cluster is
//     refused as firmly as one of another CA.
//   - A certificate on the CA's revocation list (ca.crl, `drove ca
//     revoke`) is refused by both ends from the next handshake on; the
//     list is read again whenever its file changes, and one that cannot
//     be read or is not the CA's refuses every peer.
//   - TLS 1.3 only: no downgrade to weaker suites, and the handshake
//     completes before either side sends a byte of the move.
//   - Private keys are written 0600 and refused when group or others can
//     read them: a key anyone on the node can read is not a node identity.
package nodeid
