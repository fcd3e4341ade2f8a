package events

import (
	"testing"
)

// FuzzDecode checks the decoder's two promises on any input: it never
// panics, and what it accepts re-encodes to bytes it accepts again as the
// same event. The seeds are valid encodings of every type, so the fuzzer
// starts from deep inside the accepted language.
func FuzzDecode(f *testing.F) {
	for _, p := range samples() {
		b, err := Encode(sampleEnvelope(p))
		if err != nil {
			f.Fatalf("seed %s: %v", p.Type(), err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			return
		}
		b2, err := Encode(e)
		if err != nil {
			t.Fatalf("Decode accepted what Encode refuses: %v\ninput: %q", err, b)
		}
		e2, err := Decode(b2)
		if err != nil {
			t.Fatalf("Decode refused its own re-encoding: %v\nre-encoded: %q", err, b2)
		}
		if !sameEnvelope(e, e2) {
			t.Fatalf("round trip changed the event:\nfirst  %+v\nsecond %+v", e, e2)
		}
		if _, err := e.DecodePayload(); err != nil {
			t.Fatalf("Decode accepted a payload DecodePayload refuses: %v", err)
		}
	})
}
