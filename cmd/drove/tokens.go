package main

import (
	"fmt"
	"os"

	"github.com/drovehq/drove/gateway"
)

// loadTokens reads the gateway's bearer tokens from file (one
// TOKEN=ACCOUNT:ROLE a line, mode 0600) and from env DROVE_TOKENS (comma-separated);
// none at all leaves authentication off.
func loadTokens(file string) (map[string]gateway.Account, error) {
	spec := os.Getenv("DROVE_TOKENS")
	if file != "" {
		// Like ssh with a private key: a token file others can read is
		// refused, not just warned about.
		st, err := os.Stat(file)
		if err != nil {
			return nil, err
		}
		if st.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("tokens file %s is readable by group or others (%v): chmod 600 it", file, st.Mode().Perm())
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		spec += "\n" + string(b)
	}
	return gateway.ParseTokens(spec)
}
