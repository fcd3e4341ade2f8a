package notary

import (
	"crypto/ed25519"
	"encoding/base64"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/chain"
)

// sign sets c's key id and signature: ed25519 over chain.SignedBytes, the
// bytes chain.CheckSignature checks. Signing is the notary's alone (it
// holds the private key); the chain package defines only what is signed.
func sign(c *events.CheckpointRecorded, key ed25519.PrivateKey) {
	c.KeyID = chain.KeyID(key.Public().(ed25519.PublicKey))
	c.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(key, chain.SignedBytes(*c)))
}
