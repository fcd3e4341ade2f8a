package inventory

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/drovehq/drove/events"
)

// The binary codec of nodes and instances in a snapshot (snapshot.go):
// varints, length-prefixed strings, and slices and pointers that keep nil
// apart from empty and from a pointer to a zero value, so a value decodes
// to exactly what the fold held (which came from an event's JSON).
// Every field is written by hand, in the order of its struct; the test
// TestCodecCoversEveryField fills every field of the structs by
// reflection, so a field added to events without a line here fails it.

// maxLen bounds a string's or a slice's length read from a file, so a
// damaged one cannot make Decode allocate without end.
const maxLen = 1 << 24

var errTooLong = errors.New("a length past the limit")

// writer writes the codec's values to a bufio.Writer; its first error
// sticks and ends every later write.
type writer struct {
	w   *bufio.Writer
	buf [binary.MaxVarintLen64]byte
	err error
}

func (w *writer) bytes(b []byte) {
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

func (w *writer) uvarint(v uint64) { w.bytes(binary.AppendUvarint(w.buf[:0], v)) }
func (w *writer) varint(v int64)   { w.bytes(binary.AppendVarint(w.buf[:0], v)) }

func (w *writer) str(s string) {
	w.uvarint(uint64(len(s)))
	if w.err == nil {
		_, w.err = w.w.WriteString(s)
	}
}

func (w *writer) boolean(b bool) {
	if b {
		w.uvarint(1)
	} else {
		w.uvarint(0)
	}
}

// count writes a slice's length as 0 for nil and n+1 otherwise.
func (w *writer) count(n int, isNil bool) {
	if isNil {
		w.uvarint(0)
	} else {
		w.uvarint(uint64(n) + 1)
	}
}

func (w *writer) strs(ss []string) {
	w.count(len(ss), ss == nil)
	for _, s := range ss {
		w.str(s)
	}
}

func (w *writer) int64s(vs []int64) {
	w.count(len(vs), vs == nil)
	for _, v := range vs {
		w.varint(v)
	}
}

func (w *writer) timestamp(t time.Time) {
	b, err := t.MarshalBinary() // keeps the zone's offset: decodes Equal and alike
	if err != nil && w.err == nil {
		w.err = err
	}
	w.str(string(b))
}

func (w *writer) pos(p Pos) {
	w.timestamp(p.Time)
	w.varint(int64(p.Partition))
	w.varint(p.Offset)
}

func (w *writer) resources(r events.Resources) {
	w.varint(r.MemoryMiB)
	w.varint(r.DiskMiB)
	w.varint(int64(r.CPUs))
	w.varint(int64(r.Spindles))
}

func (w *writer) node(n *events.NodeAnnounced) {
	w.str(n.Name)
	w.str(n.Group)
	w.resources(n.Total)
	w.resources(n.Free)
	w.varint(n.ReservedMemoryMiB)
	w.varint(n.SendBytesPerSecond)
	w.varint(n.ReceiveBytesPerSecond)
	w.boolean(n.Offline)
	w.boolean(n.Drained)
	w.boolean(n.VMCapable)
	w.strs(n.Tags)
}

func (w *writer) instance(in *events.InstanceDeclared) {
	w.str(in.Name)
	w.str(in.Owner)
	w.varint(in.Size.MemoryMiB)
	w.varint(int64(in.Size.VCPUs))
	w.int64s(in.Size.DisksMiB)
	w.varint(int64(in.Size.Spindles))
	w.str(string(in.Storage))
	w.str(string(in.RunState))
	w.str(in.PrimaryNode)
	w.str(in.SecondaryNode)
	w.count(len(in.NICs), in.NICs == nil)
	for _, nic := range in.NICs {
		w.str(nic.MAC)
		w.str(nic.Network)
	}
	w.strs(in.Tags)
	w.count(0, in.UserMigration == nil) // 0: nil, 1: set
	if in.UserMigration != nil {
		w.boolean(*in.UserMigration)
	}
	w.varint(in.MaxDowntimeMS)
}

// reader reads what writer wrote; its first error sticks and every later
// read returns zero values. Strings repeated across objects (node, group
// and owner names, kinds) are kept once: 100,000 instances name a few
// thousand nodes.
type reader struct {
	r        *bufio.Reader
	err      error
	interned map[string]string
}

func newReader(r *bufio.Reader) *reader {
	return &reader{r: r, interned: map[string]string{}}
}

func (r *reader) fail(err error) {
	if r.err == nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		r.err = err
	}
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(r.r)
	r.fail(err)
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(r.r)
	r.fail(err)
	return v
}

func (r *reader) length() int {
	n := r.uvarint()
	if n > maxLen {
		r.fail(errTooLong)
		return 0
	}
	return int(n)
}

func (r *reader) raw() []byte {
	n := r.length()
	if r.err != nil || n == 0 {
		return nil
	}
	b, err := r.r.Peek(n)
	if err == nil {
		_, err = r.r.Discard(n)
		return b // valid until the next read
	}
	b = make([]byte, n)
	_, err = io.ReadFull(r.r, b)
	r.fail(err)
	return b
}

func (r *reader) str() string {
	b := r.raw()
	if len(b) == 0 {
		return ""
	}
	return string(b)
}

// istr reads a string that many objects share.
func (r *reader) istr() string {
	b := r.raw()
	if len(b) == 0 {
		return ""
	}
	if s, ok := r.interned[string(b)]; ok {
		return s
	}
	s := string(b)
	r.interned[s] = s
	return s
}

func (r *reader) boolean() bool {
	switch v := r.uvarint(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.fail(fmt.Errorf("a boolean of %d", v))
		return false
	}
}

// count reads a slice's length: -1 for nil.
func (r *reader) count() int {
	n := r.length()
	return n - 1
}

func (r *reader) strs(intern bool) []string {
	n := r.count()
	if n < 0 || r.err != nil {
		return nil
	}
	out := make([]string, 0, min(n, 1024))
	for range n {
		if intern {
			out = append(out, r.istr())
		} else {
			out = append(out, r.str())
		}
	}
	return out
}

func (r *reader) int64s() []int64 {
	n := r.count()
	if n < 0 || r.err != nil {
		return nil
	}
	out := make([]int64, 0, min(n, 1024))
	for range n {
		out = append(out, r.varint())
	}
	return out
}

func (r *reader) timestamp() time.Time {
	var t time.Time
	if b := r.raw(); r.err == nil {
		r.fail(t.UnmarshalBinary(b))
	}
	return t
}

func (r *reader) pos() Pos {
	return Pos{Time: r.timestamp(), Partition: int32(r.varint()), Offset: r.varint()}
}

func (r *reader) resources() events.Resources {
	return events.Resources{MemoryMiB: r.varint(), DiskMiB: r.varint(), CPUs: int(r.varint()), Spindles: int(r.varint())}
}

func (r *reader) node() *events.NodeAnnounced {
	return &events.NodeAnnounced{
		Name: r.str(), Group: r.istr(), Total: r.resources(), Free: r.resources(),
		ReservedMemoryMiB: r.varint(), SendBytesPerSecond: r.varint(), ReceiveBytesPerSecond: r.varint(),
		Offline: r.boolean(), Drained: r.boolean(), VMCapable: r.boolean(), Tags: r.strs(true),
	}
}

func (r *reader) instance() *events.InstanceDeclared {
	in := &events.InstanceDeclared{Name: r.str(), Owner: r.istr()}
	in.Size = events.Size{MemoryMiB: r.varint(), VCPUs: int(r.varint()), DisksMiB: r.int64s(), Spindles: int(r.varint())}
	in.Storage, in.RunState = events.StorageKind(r.istr()), events.RunState(r.istr())
	in.PrimaryNode, in.SecondaryNode = r.istr(), r.istr()
	if n := r.count(); n >= 0 && r.err == nil {
		in.NICs = make([]events.NIC, 0, min(n, 1024))
		for range n {
			in.NICs = append(in.NICs, events.NIC{MAC: r.str(), Network: r.istr()})
		}
	}
	in.Tags = r.strs(true)
	if r.count() == 0 {
		b := r.boolean()
		in.UserMigration = &b
	}
	in.MaxDowntimeMS = r.varint()
	return in
}
