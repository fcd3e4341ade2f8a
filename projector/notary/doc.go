// Package notary is Drove's tamper evidence (issue 15): a small service
// that reads every partition of every topic in order, chains each event
// record's stored bytes (events/chain) and appends, every Interval, a
// checkpoint per partition that moved (events.CheckpointRecorded on
// drove.checkpoints), signed with the operator's ed25519 key when one is
// given; and the reading side of `drove verify-log`, which recomputes the
// chains from offset zero against those checkpoints.
//
// The chain is computed by the reader, after the fact: the services that
// write a partition (several producers share most) need no coordination
// and know nothing of it. One notary runs at a time (drove dev runs one;
// a restarted notary resumes after its last checkpoint in the log). It
// reads records undecoded (kafka.Reader's Raw: key, value, headers,
// timestamp) because the chain is over the bytes as stored, not over
// decoded events.
//
// It lives under projector/ because it is one of the log's derived
// outputs, like the views: it reads the whole log in order and writes
// what it derives (here back to the log, as checkpoints). The keys
// (key.go) and the signing (sign.go) are its own; events/chain defines
// the chain and checks signatures, so a verifier needs no private key.
package notary
