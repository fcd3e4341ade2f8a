// Package chain is the hash chain of Drove's tamper evidence (issue 15):
// what the notary computes over every event record of a partition, what a
// checkpoint certifies and which of its bytes a signature covers, and the
// verifier that recomputes it from offset zero, checks the signatures and
// names the first record that differs. Standard library and events only,
// so anyone holding a copy of the log can check it: the notary
// (projector/notary) and `drove verify-log` share it, and both hash the
// same bytes the same way. Signing and keys are the notary's: this
// package holds no private key.
//
// A record's digest is SHA-256 over its stored bytes as the broker returns
// them: timestamp, key, value and headers, each length-prefixed, after a
// domain tag. Offsets are not hashed: a record's place is its index in the
// chain of the partition's data records (commit markers are not chained),
// so a copy of the log written by another producer, whose markers fall
// elsewhere, verifies alike. The chain of a partition starts at a genesis
// naming the topic and partition and links each digest:
// head(i+1) = SHA-256(head(i) || digest(i)).
package chain
