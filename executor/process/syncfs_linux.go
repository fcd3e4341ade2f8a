package process

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFS writes back what the file system holding dir has cached, on
// Linux for that file system alone.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
