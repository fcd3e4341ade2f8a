package events

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Envelope is one event as it sits in the log. Everything a consumer needs to
// route, order, deduplicate and explain an event is here; what happened is in
// Payload, decoded through the registry by DecodePayload.
type Envelope struct {
	// ID is unique per event; consumers deduplicate on it, since Kafka
	// delivers at least once.
	ID string `json:"id"`
	// Type and Version select the payload schema in the registry.
	Type    string `json:"type"`
	Version int    `json:"version"`
	// Time is when the producer created the event, in UTC.
	Time time.Time `json:"time"`
	// Key is the Kafka partition key, derived from the payload by New.
	Key string `json:"key"`
	// CorrelationID is the id of the request this event belongs to, empty
	// for events no request caused (a node announcing itself).
	CorrelationID string `json:"correlation_id,omitempty"`
	// CausationID is the id of the event that caused this one, so a chain
	// of effects can be walked back to its first cause.
	CausationID string `json:"causation_id,omitempty"`
	// Producer names the service instance that wrote the event.
	Producer string `json:"producer"`
	// Reason is the trail every event carries: who asked, why, and from
	// which request.
	Reason Reason `json:"reason"`
	// Payload is the JSON object of the typed payload, compacted.
	Payload json.RawMessage `json:"payload"`
}

// Reason says who asked for an event and why. It is copied from cause to
// effect (see CausedBy), so the last opcode of a plan still names the
// operator whose request started it.
type Reason struct {
	// Actor is who asked: "operator:alice", "owner:acct-42",
	// "node:cn7", "planner".
	Actor string `json:"actor"`
	// Why is the human answer to "why did this happen?".
	Why string `json:"why"`
	// RequestID is the request the event serves; equal to the envelope's
	// CorrelationID when both are set.
	RequestID string `json:"request_id,omitempty"`
}

// Option adjusts an envelope built by New.
type Option func(*Envelope)

// New wraps payload in an envelope with a fresh id, the current UTC time,
// the payload's type, version and key, and whatever the options add. It does
// not validate: Encode does, so the caller sees every problem at once.
//
// If the payload cannot be marshalled (only a NaN or infinite float can do
// that to these types) the envelope gets no payload, and Encode reports it.
func New(payload Payload, opts ...Option) Envelope {
	e := Envelope{
		ID:   NewID(),
		Time: time.Now().UTC().Round(0),
	}
	if payload != nil {
		e.Type = payload.Type()
		e.Version = payload.Version()
		e.Key = payload.key()
		if raw, err := json.Marshal(payload); err == nil {
			e.Payload = raw
		}
	}
	for _, opt := range opts {
		opt(&e)
	}
	return e
}

// WithProducer names the service instance writing the event.
func WithProducer(name string) Option {
	return func(e *Envelope) { e.Producer = name }
}

// WithReason sets the reason trail. A request id in it also becomes the
// correlation id: they are one fact read by two audiences.
func WithReason(r Reason) Option {
	return func(e *Envelope) {
		e.Reason = r
		if r.RequestID != "" {
			e.CorrelationID = r.RequestID
		}
	}
}

// CausedBy marks the event as an effect of cause: it records cause as its
// causation, and inherits the cause's request and reason trail. Options after
// it may still override the reason.
func CausedBy(cause Envelope) Option {
	return func(e *Envelope) {
		e.CausationID = cause.ID
		e.CorrelationID = cause.CorrelationID
		e.Reason = cause.Reason
	}
}

// WithTime sets the event time (converted to UTC); tests and replays use it
// for reproducible envelopes.
func WithTime(t time.Time) Option {
	return func(e *Envelope) { e.Time = t.UTC().Round(0) }
}

// NewID returns an RFC 9562 version 7 UUID: the Unix time in
// milliseconds, then 74 random bits. Ids made one after the other sort one
// after the other, so every index keyed by them (event_log's primary key
// first of all, issue 32) grows at its right edge instead of splitting
// pages all over: about half the cost per row of a random (version 4) id.
// They reveal when they were made, which every envelope says anyway.
// crypto/rand is enough, and it keeps the package free of dependencies.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[6:]) // never fails since Go 1.24; it crashes instead
	ms := uint64(time.Now().UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}
