package main

import (
	"os"

	"github.com/drovehq/drove/gateway"
)

// loadTokens reads the gateway's bearer tokens from file (one
// TOKEN=ACCOUNT:ROLE a line) and from env DROVE_TOKENS (comma-separated);
// none at all leaves authentication off.
func loadTokens(file string) (map[string]gateway.Account, error) {
	spec := os.Getenv("DROVE_TOKENS")
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		spec += "\n" + string(b)
	}
	return gateway.ParseTokens(spec)
}
