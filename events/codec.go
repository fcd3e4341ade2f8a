package events

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Encode validates e exactly as Decode would and returns its JSON. Refusing
// here what consumers would refuse keeps bad events out of the log, where
// they would stay forever.
func Encode(e Envelope) ([]byte, error) {
	if err := checkEnvelope(&e); err != nil {
		return nil, err
	}
	if _, err := e.checkPayload(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// No HTML escaping: events are not HTML, and escaping would make the
	// payload bytes differ from the ones Decode returns.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Decode parses one event strictly: unknown fields, missing required fields,
// an unknown type, an unsupported version, or a payload that does not decode
// into its registered struct are all errors. The returned envelope's payload
// is compacted and its time is in UTC, so Encode(Decode(b)) is canonical.
func Decode(b []byte) (Envelope, error) {
	e, _, err := DecodeWithPayload(b)
	return e, err
}

// DecodeWithPayload is Decode that also returns the typed payload it
// decoded to check the event, for readers that need both: calling
// DecodePayload after Decode would decode the payload a second time.
func DecodeWithPayload(b []byte) (Envelope, Payload, error) {
	var e Envelope
	if err := strictUnmarshal(b, &e); err != nil {
		return Envelope{}, nil, fmt.Errorf("%w: envelope: %v", ErrMalformed, err)
	}
	if err := checkEnvelope(&e); err != nil {
		return Envelope{}, nil, err
	}
	p, err := e.checkPayload()
	if err != nil {
		return Envelope{}, nil, err
	}
	e.Payload = compacted(e.Payload)
	e.Time = e.Time.UTC()
	return e, p, nil
}

// compacted is p, valid JSON, without insignificant space. A payload with
// no space byte at all, which is what json.Marshal writes, is already
// compact and is kept as it is, sparing every reader another scan and
// copy of the whole text.
func compacted(p []byte) []byte {
	if bytes.IndexAny(p, " \t\r\n") < 0 {
		return p
	}
	var b bytes.Buffer
	_ = json.Compact(&b, p) // valid: the payload was decoded
	return b.Bytes()
}

// DecodePayload returns the typed payload (a value such as NodeAnnounced,
// never a pointer), decoded as strictly as Decode does.
func (e Envelope) DecodePayload() (Payload, error) {
	if e.Payload == nil {
		return nil, malformed("payload", "missing")
	}
	ent, err := lookup(e.Type, e.Version)
	if err != nil {
		return nil, err
	}
	return ent.decode(e.Payload)
}

// Topic returns the topic the event belongs on.
func (e Envelope) Topic() (string, error) { return TopicOf(e.Type) }

// As decodes e's payload as a T, for handlers that know what they expect:
//
//	req, err := events.As[events.EvacuationRequested](env)
func As[T Payload](e Envelope) (T, error) {
	var zero T
	if e.Type != zero.Type() {
		return zero, fmt.Errorf("%w: %s, not %s", ErrTypeMismatch, e.Type, zero.Type())
	}
	p, err := e.DecodePayload()
	if err != nil {
		return zero, err
	}
	t, ok := p.(T)
	if !ok { // a T registered at another version under the same type
		return zero, fmt.Errorf("%w: %s v%d is %T", ErrTypeMismatch, e.Type, e.Version, p)
	}
	return t, nil
}

// checkPayload decodes the payload and checks that the envelope's key is the
// one the payload implies: the key chose the partition, so a wrong key means
// the event was ordered against the wrong neighbours.
func (e Envelope) checkPayload() (Payload, error) {
	p, err := e.DecodePayload()
	if err != nil {
		return nil, err
	}
	if want := p.key(); e.Key != want {
		return nil, malformed("key", "%q, but the payload's key is %q", e.Key, want)
	}
	return p, nil
}

// checkEnvelope reports every missing or invalid envelope field at once.
func checkEnvelope(e *Envelope) error {
	var p problems
	p.require("id", e.ID)
	p.require("type", e.Type)
	switch {
	case e.Version == 0:
		p.addf("version", "missing")
	case e.Version < 0:
		p.addf("version", "negative (%d)", e.Version)
	}
	if e.Time.IsZero() {
		p.addf("time", "missing")
	} else if _, off := e.Time.Zone(); off != 0 {
		p.addf("time", "not UTC (%s)", e.Time.Format("-07:00"))
	}
	p.require("key", e.Key)
	p.require("producer", e.Producer)
	p.require("reason.actor", e.Reason.Actor)
	p.require("reason.why", e.Reason.Why)
	if r := e.Reason.RequestID; r != "" && r != e.CorrelationID {
		p.addf("reason.request_id", "%q differs from correlation_id %q", r, e.CorrelationID)
	}
	if len(e.Payload) == 0 {
		p.addf("payload", "missing")
	} else if b := bytes.TrimLeft(e.Payload, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		p.addf("payload", "not a JSON object")
	}
	if err := p.err("envelope"); err != nil {
		return err
	}
	// Checked after the required fields so an event missing its type says
	// so, instead of claiming an unknown type "".
	if _, err := lookup(e.Type, e.Version); err != nil {
		return err
	}
	return nil
}
