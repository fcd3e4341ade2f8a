package nodeid

import (
	"os"
	"path/filepath"
)

// FilesIn is where Issue put node's identity in dir.
func FilesIn(dir, node string) Files {
	return Files{Cert: filepath.Join(dir, node+".crt"), Key: filepath.Join(dir, node+".key"),
		CA: filepath.Join(dir, CACert), Secret: filepath.Join(dir, Secret), CRL: filepath.Join(dir, CRL)}
}

// Bundle makes (or reuses) a CA in dir/ca and an identity for each node in
// dir/NODE, and loads them: what a one-machine cluster (`drove dev`, tests)
// needs so that its moves are encrypted like a real cluster's. A CA or an
// identity already there is kept, so a restarted dev cluster keeps its
// identities.
func Bundle(dir string, nodes ...string) (map[string]*Identity, error) {
	ca := filepath.Join(dir, "ca")
	if _, err := os.Stat(filepath.Join(ca, CAKey)); os.IsNotExist(err) {
		if err := InitCA(ca, "Drove dev CA"); err != nil {
			return nil, err
		}
	}
	ids := map[string]*Identity{}
	for _, n := range nodes {
		out := filepath.Join(dir, n)
		f := FilesIn(out, n)
		if _, err := os.Stat(f.Key); os.IsNotExist(err) {
			if err := Issue(ca, n, out); err != nil {
				return nil, err
			}
		}
		id, err := Load(f)
		if err != nil {
			return nil, err
		}
		ids[n] = id
	}
	return ids, nil
}
