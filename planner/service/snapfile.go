package service

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"time"

	"github.com/drovehq/drove/planner/inventory"
)

// The snapshot file's layout (see snapshot.go): the magic line, the
// header, the inventory (planner/inventory's Encode), the jobs, migrations
// and nodes folds, then the trailer: "crc32c ", eight hex digits and a
// newline, of every byte before it. The header and the folds are JSON,
// each preceded by its length as a uvarint.

const magic = "drove planner snapshot\n"

const trailerLen = len("crc32c 01234567\n")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// createSnapshotFile writes snap to a new temporary file in dir and
// returns its name; syncAndRename makes it the snapshot.
func createSnapshotFile(dir string, snap *snapshot) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, snapshotFile+".*")
	if err != nil {
		return "", err
	}
	sum := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(f, sum), 1<<20)
	err = encodeSnapshot(bw, snap)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		_, err = fmt.Fprintf(f, "crc32c %08x\n", sum.Sum32())
	}
	if err = errors.Join(err, f.Close()); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// encodeSnapshot writes everything before the trailer to w.
func encodeSnapshot(w *bufio.Writer, snap *snapshot) error {
	if _, err := w.WriteString(magic); err != nil {
		return err
	}
	if err := writeJSON(w, snap.header); err != nil {
		return err
	}
	if err := snap.st.inv.Encode(w); err != nil {
		return err
	}
	for _, fold := range []any{snap.st.reqs, snap.st.migs, snap.st.nodes} {
		if err := writeJSON(w, fold); err != nil {
			return err
		}
	}
	return nil
}

// writeJSON writes v as JSON after its length.
func writeJSON(w *bufio.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := w.Write(binary.AppendUvarint(nil, uint64(len(b)))); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// readJSON reads into v what writeJSON wrote, at most max bytes of it.
func readJSON(r *bufio.Reader, v any, max int64) error {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return err
	}
	if n > uint64(max) {
		return fmt.Errorf("%d bytes, past the file's end", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// syncAndRename flushes tmp to disk and renames it to dst, so that dst is
// always a whole snapshot; tmp is gone either way.
func syncAndRename(tmp, dst string) error {
	defer os.Remove(tmp) // after the rename, a no-op
	f, err := os.OpenFile(tmp, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// readSnapshotFile reads the snapshot at path; an error that wraps
// os.ErrNotExist when there is none, one that says why it cannot be used
// otherwise.
func readSnapshotFile(path string) (*snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	body := fi.Size() - int64(trailerLen)
	if body <= int64(len(magic)) {
		return nil, fmt.Errorf("unreadable: %d bytes, too short for a snapshot", fi.Size())
	}
	sum := crc32.New(castagnoli)
	r := bufio.NewReaderSize(io.TeeReader(io.NewSectionReader(f, 0, body), sum), 1<<20)
	snap, err := decodeSnapshot(r, body)
	if err != nil {
		return nil, err
	}
	if err := checkTrailer(f, body, r, sum); err != nil {
		return nil, err
	}
	return snap, nil
}

// decodeSnapshot reads what encodeSnapshot wrote, of a body of size
// bytes: the header first, and nothing more when its version is not this
// build's.
func decodeSnapshot(r *bufio.Reader, size int64) (*snapshot, error) {
	b := make([]byte, len(magic))
	if _, err := io.ReadFull(r, b); err != nil || string(b) != magic {
		return nil, fmt.Errorf("unreadable: not a planner snapshot (starts %q)", b)
	}
	var h header
	if err := readJSON(r, &h, size); err != nil {
		return nil, fmt.Errorf("unreadable: header: %w", err)
	}
	if h.Version != snapshotVersion {
		return nil, fmt.Errorf("format %d, this build reads %d", h.Version, snapshotVersion)
	}
	inv, err := inventory.Decode(r)
	if err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	st := newState(time.Now)
	st.inv = inv
	folds := []struct {
		name string
		into any
	}{{"jobs", st.reqs}, {"migrations", st.migs}, {"nodes", st.nodes}} // encodeSnapshot's order
	for _, f := range folds {
		if err := readJSON(r, f.into, size); err != nil {
			return nil, fmt.Errorf("unreadable: %s: %w", f.name, err)
		}
	}
	return &snapshot{h, st}, nil
}

// checkTrailer reads the rest of the body through r (so sum covers all of
// it) and compares sum with the trailer at offset body of f.
func checkTrailer(f *os.File, body int64, r io.Reader, sum hash.Hash32) error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return fmt.Errorf("unreadable: %w", err)
	}
	b := make([]byte, trailerLen)
	if _, err := f.ReadAt(b, body); err != nil {
		return fmt.Errorf("unreadable: trailer: %w", err)
	}
	var want uint32
	if _, err := fmt.Sscanf(string(b), "crc32c %08x\n", &want); err != nil {
		return fmt.Errorf("damaged: no trailer (%q)", b)
	}
	if got := sum.Sum32(); got != want {
		return fmt.Errorf("damaged: checksum %08x, the trailer says %08x", got, want)
	}
	return nil
}
