package projector

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// copyData builds the data of a COPY ... FROM STDIN (FORMAT binary): a
// header, each row as its field count and its fields (length, then bytes),
// and a trailer. It is built before the batch's transaction (prepare), so
// the transaction only sends it. The encodings are Postgres's binary ones
// for the few types the log's tables use; Postgres checks every value as
// it would a parameter's (a NUL in a text is refused with SQLSTATE 22021,
// a bad JSON with 22P02), so a value it refuses still sets its record
// aside (foldDecoded).
type copyData struct {
	b    []byte
	rows int
}

var copySignature = []byte("PGCOPY\n\377\r\n\000")

// row starts a row of n fields.
func (c *copyData) row(n int) {
	if len(c.b) == 0 {
		c.b = append(c.b, copySignature...)
		c.b = binary.BigEndian.AppendUint32(c.b, 0) // flags
		c.b = binary.BigEndian.AppendUint32(c.b, 0) // no header extension
	}
	c.b = binary.BigEndian.AppendUint16(c.b, uint16(n))
	c.rows++
}

// reserve makes room for about n bytes of rows before the first, so a
// batch's data is not copied over and over as it grows.
func (c *copyData) reserve(n int) { c.b = slices.Grow(c.b, n+len(copySignature)+10) }

func (c *copyData) text(s string) {
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(len(s)))
	c.b = append(c.b, s...)
}

func (c *copyData) int4(v int32) {
	c.b = binary.BigEndian.AppendUint32(c.b, 4)
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(v))
}

func (c *copyData) int8(v int64) {
	c.b = binary.BigEndian.AppendUint32(c.b, 8)
	c.b = binary.BigEndian.AppendUint64(c.b, uint64(v))
}

// y2k is Postgres's epoch, in Unix microseconds.
const y2k = 946_684_800_000_000

// timestamptz is t in whole microseconds since 2000-01-01 UTC, truncated
// as pgx truncates a parameter (micros), so a time is stored the same
// whichever way it is sent.
func (c *copyData) timestamptz(t time.Time) {
	c.b = binary.BigEndian.AppendUint32(c.b, 8)
	c.b = binary.BigEndian.AppendUint64(c.b, uint64(micros(t)-y2k))
}

// json is a JSON text, whose binary form is the text itself.
func (c *copyData) json(j []byte) {
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(len(j)))
	c.b = append(c.b, j...)
}

// bytes is the finished data; nil when there are no rows.
func (c *copyData) bytes() []byte {
	if c.rows == 0 {
		return nil
	}
	return binary.BigEndian.AppendUint16(c.b, 0xffff)
}

// copyIn runs one COPY of data (copyData.bytes) into table's columns, in
// tx, whose search_path names the schema.
func copyIn(ctx context.Context, tx pgx.Tx, table string, columns []string, data []byte) error {
	if data == nil {
		return nil
	}
	cols := make([]string, len(columns))
	for i, c := range columns {
		cols[i] = quoteIdent(c)
	}
	sql := "COPY " + quoteIdent(table) + " (" + strings.Join(cols, ", ") + ") FROM STDIN (FORMAT binary)"
	_, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(data), sql)
	return err
}
