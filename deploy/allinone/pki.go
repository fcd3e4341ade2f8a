package allinone

import (
	"os"
	"path/filepath"

	"github.com/drovehq/drove/executor/nodeid"
)

// identity is node's identity for the streams of moves, issued on first
// use by the System's own CA (in Config.PKIDir, or a temporary directory
// removed at Stop): a one-machine Drove encrypts its moves as a real
// cluster does, whatever its driver.
func (s *System) identity(node string) (*nodeid.Identity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := s.cfg.PKIDir
	if dir == "" {
		if s.tmpPKI == "" {
			d, err := os.MkdirTemp("", "drove-pki-")
			if err != nil {
				return nil, err
			}
			s.tmpPKI = d
		}
		dir = s.tmpPKI
	}
	ids, err := nodeid.Bundle(filepath.Clean(dir), node)
	if err != nil {
		return nil, err
	}
	return ids[node], nil
}

// removePKI removes the temporary PKI directory, if one was made.
func (s *System) removePKI() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tmpPKI != "" {
		_ = os.RemoveAll(s.tmpPKI)
		s.tmpPKI = ""
	}
}
