package chain

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/drovehq/drove/events"
)

// Digest is a SHA-256 value: a record's digest or a chain head.
type Digest [32]byte

func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Header is one Kafka record header.
type Header struct{ Key, Value []byte }

// Record is a record's stored bytes and its place in the log.
type Record struct {
	Offset        int64
	TimestampMill int64 // the record's timestamp, milliseconds since the epoch
	Key, Value    []byte
	Headers       []Header
}

const recordTag = "drove-record-v1\x00"

// Of returns a record's digest.
func Of(r Record) Digest {
	h := sha256.New()
	h.Write([]byte(recordTag))
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(r.TimestampMill))
	h.Write(n[:])
	field := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field(r.Key)
	field(r.Value)
	binary.BigEndian.PutUint64(n[:], uint64(len(r.Headers)))
	h.Write(n[:])
	for _, hd := range r.Headers {
		field(hd.Key)
		field(hd.Value)
	}
	var d Digest
	h.Sum(d[:0])
	return d
}

// Genesis is the head of a partition's chain before its first record.
func Genesis(topic string, partition int32) Digest {
	return sha256.Sum256([]byte("drove-chain-v1\x00" + topic + "\x00" + strconv.Itoa(int(partition))))
}

// Link extends a chain by one record's digest.
func Link(head, d Digest) Digest {
	var b [64]byte
	copy(b[:32], head[:])
	copy(b[32:], d[:])
	return sha256.Sum256(b[:])
}

// Builder chains the records of one partition and cuts checkpoints.
type Builder struct {
	Topic     string
	Partition int32
	// Records chained so far, and the head after them.
	Records int64
	Head    Digest
	// NextOffset is the offset after the last record chained.
	NextOffset int64

	first      int64 // first record not yet in a checkpoint
	fromOffset int64
	prev       Digest
	marks      []byte
}

// NewBuilder starts a partition's chain at its genesis.
func NewBuilder(topic string, partition int32) *Builder {
	g := Genesis(topic, partition)
	return &Builder{Topic: topic, Partition: partition, Head: g, prev: g, fromOffset: -1}
}

// Resume continues after checkpoint c, the partition's last.
func Resume(c events.CheckpointRecorded) (*Builder, error) {
	head, err := parseDigest(c.Head)
	if err != nil {
		return nil, err
	}
	return &Builder{Topic: c.Topic, Partition: c.Partition, Records: c.Records, Head: head,
		NextOffset: c.NextOffset, first: c.Records, prev: head, fromOffset: -1}, nil
}

// Add chains one record, read in offset order.
func (b *Builder) Add(r Record) {
	d := Of(r)
	b.Head = Link(b.Head, d)
	b.Records++
	b.NextOffset = r.Offset + 1
	if b.fromOffset < 0 {
		b.fromOffset = r.Offset
	}
	b.marks = append(b.marks, d[:events.MarkSize]...)
}

// Pending is the records chained since the last checkpoint.
func (b *Builder) Pending() int64 { return b.Records - b.first }

// Cut returns the checkpoint of the records chained since the last one,
// unsigned (the notary signs it: the key is the notary's, not the
// chain's), and starts the next. ok is false when there is nothing to
// certify.
func (b *Builder) Cut() (c events.CheckpointRecorded, ok bool) {
	if b.Pending() == 0 {
		return c, false
	}
	c = events.CheckpointRecorded{Topic: b.Topic, Partition: b.Partition, First: b.first, Records: b.Records,
		FromOffset: b.fromOffset, NextOffset: b.NextOffset, Prev: b.prev.String(), Head: b.Head.String(),
		Marks: base64.StdEncoding.EncodeToString(b.marks)}
	b.first, b.prev, b.fromOffset, b.marks = b.Records, b.Head, -1, nil
	return c, true
}

// SignedBytes are the bytes a checkpoint's signature covers: every field
// but the signature, in a fixed order, so no re-encoding of the JSON can
// change what was signed. The notary signs them (projector/notary);
// CheckSignature checks them, which is why they are defined here, beside
// the verifier, and not with the key.
func SignedBytes(c events.CheckpointRecorded) []byte {
	marks := sha256.Sum256([]byte(c.Marks))
	return signedBytes(c, marks[:])
}

// signedBytes are SignedBytes given the SHA-256 of the marks, which is
// all a signed head kept outside the log has of them (see Head).
func signedBytes(c events.CheckpointRecorded, marksSHA256 []byte) []byte {
	return fmt.Appendf(nil, "drove-checkpoint-v1\n%s\n%d\n%d\n%d\n%d\n%d\n%s\n%s\n%x\n%s\n",
		c.Topic, c.Partition, c.First, c.Records, c.FromOffset, c.NextOffset, c.Prev, c.Head, marksSHA256, c.KeyID)
}

// KeyID names a public key in checkpoints.
func KeyID(pub ed25519.PublicKey) string {
	s := sha256.Sum256(pub)
	return hex.EncodeToString(s[:8])
}

// ErrSignature is wrapped by CheckSignature's refusals.
var ErrSignature = errors.New("chain: checkpoint signature refused")

// CheckSignature refuses a checkpoint not signed by pub: unsigned, signed
// with another key, or altered after signing.
func CheckSignature(c events.CheckpointRecorded, pub ed25519.PublicKey) error {
	return checkSigned(c.KeyID, c.Signature, SignedBytes(c), pub)
}

// checkSigned checks an ed25519 signature (base64) over signed, by the
// key named keyID, which must be pub.
func checkSigned(keyID, signature string, signed []byte, pub ed25519.PublicKey) error {
	if signature == "" {
		return fmt.Errorf("%w: unsigned", ErrSignature)
	}
	if keyID != KeyID(pub) {
		return fmt.Errorf("%w: signed with key %s, not %s", ErrSignature, keyID, KeyID(pub))
	}
	sig, err := base64.StdEncoding.DecodeString(signature)
	if err != nil || !ed25519.Verify(pub, signed, sig) {
		return fmt.Errorf("%w: the signature does not match (key %s)", ErrSignature, keyID)
	}
	return nil
}

func parseDigest(s string) (Digest, error) {
	var d Digest
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(d) {
		return d, fmt.Errorf("chain: %q is not a hex SHA-256", s)
	}
	copy(d[:], b)
	return d, nil
}
