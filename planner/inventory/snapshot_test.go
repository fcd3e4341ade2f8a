package inventory

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
)

// sample is an inventory with what an encoding of its own would lose: a
// *bool holding false, an instance placed after
// it was declared, objects in an order the log fixed (not their names'
// order). Its events come through the log's encoding, as the fold's do.
func sample() *Inventory {
	inv := &logged{New()}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) Pos {
		return Pos{Time: t0.Add(time.Duration(i) * time.Second), Partition: int32(i % 3), Offset: int64(i)}
	}
	no := false
	inv.Apply(events.GroupDeclared{Name: "g2", AllocPolicy: events.AllocPreferred, Tags: []string{"t"}}, at(1))
	inv.Apply(events.GroupDeclared{Name: "g1", AllocPolicy: events.AllocLastResort, ClusterTags: []string{"htools:iextags:service"}}, at(2))
	inv.Apply(events.NodeAnnounced{Name: "n2", Group: "g2", Total: events.Resources{MemoryMiB: 4096, DiskMiB: 1 << 20}}, at(4))
	inv.Apply(events.NodeAnnounced{Name: "n1", Group: "g1", VMCapable: true, Tags: []string{"rack:a"}}, at(3))
	inv.Apply(events.InstanceDeclared{Name: "i2", Owner: "acct", Storage: events.StoragePlain, RunState: events.RunRunning, PrimaryNode: "n2", UserMigration: &no,
		Size: events.Size{MemoryMiB: 512, DisksMiB: []int64{10, 20}}, NICs: []events.NIC{{MAC: "aa", Network: "x"}}}, at(6))
	inv.Apply(events.InstanceDeclared{Name: "i1", Owner: "acct", RunState: events.RunStopped, PrimaryNode: "n1", Storage: events.StorageDRBD, SecondaryNode: "n2"}, at(5))
	inv.Apply(events.InstancePlaced{Instance: "i2", Group: "g1", PrimaryNode: "n1", PreviousGroup: "g2", PreviousPrimary: "n2"}, at(7))
	inv.Apply(events.NodeUpdated{Name: "n2", Group: "g2", Drained: true}, at(8))
	return inv.Inventory
}

// logged applies payloads as read from the log.
type logged struct{ *Inventory }

func (l *logged) Apply(p events.Payload, pos Pos) {
	read, err := events.New(p).DecodePayload()
	if err != nil {
		panic(err)
	}
	l.Inventory.Apply(read, pos)
}

func encode(t *testing.T, inv *Inventory) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := inv.Encode(json.NewEncoder(&b)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// What Encode writes, Decode restores exactly: every object, every place
// in the order, every first position.
func TestEncodeDecodeRestoresTheInventory(t *testing.T) {
	inv := sample()
	b := encode(t, inv)
	got, err := Decode(json.NewDecoder(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, inv) {
		t.Fatalf("restored %+v\nwant %+v", got, inv)
	}
	if *got.Instances["i2"].UserMigration != false {
		t.Error("a *bool holding false was lost")
	}
	if again := encode(t, got); !bytes.Equal(again, b) {
		t.Errorf("encoded again:\n%s\nfirst:\n%s", again, b)
	}
}

// A stream that is cut short, out of order or about the wrong kind of
// object is refused, not restored in part.
func TestDecodeRefusesABadStream(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(string(encode(t, sample()))), "\n")
	for name, stream := range map[string][]string{
		"cut short":        lines[:len(lines)-1],
		"kinds swapped":    append(append([]string{lines[0], lines[3]}, lines[2], lines[1]), lines[4:]...),
		"an object twice":  append(append([]string{lines[0]}, lines[1], lines[1]), lines[3:]...),
		"negative counts":  {`{"groups":-1,"nodes":0,"instances":0}`},
		"not an inventory": {`[1,2,3]`},
	} {
		if _, err := Decode(json.NewDecoder(strings.NewReader(strings.Join(stream, "\n")))); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// Decode takes whatever a damaged file holds without panicking, and what
// it accepts encodes and decodes again to the same inventory.
func FuzzDecode(f *testing.F) {
	var b bytes.Buffer
	_ = sample().Encode(json.NewEncoder(&b))
	f.Add(b.Bytes())
	f.Add([]byte(`{"groups":0,"nodes":0,"instances":1}` + "\n" + `{"first":{},"instance":{"name":""}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		inv, err := Decode(json.NewDecoder(bytes.NewReader(data)))
		if err != nil {
			return
		}
		b := encode(t, inv)
		again, err := Decode(json.NewDecoder(bytes.NewReader(b)))
		if err != nil {
			t.Fatalf("re-encoded inventory does not decode: %v", err)
		}
		if b2 := encode(t, again); !bytes.Equal(b, b2) {
			t.Fatalf("encodings differ:\n%s\n%s", b, b2)
		}
	})
}
