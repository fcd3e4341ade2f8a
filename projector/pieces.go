package projector

import (
	"github.com/drovehq/drove/events/kafka"
)

// The projector's memory is bounded by bytes as well as by records: a
// batch the Reader returns (at most BatchSize records, which may each be
// as large as the log allows) is cut into pieces of at most BatchBytes of
// record bytes, and each piece is decoded, prepared and folded in a
// transaction of its own. What a piece holds past its records (decoded
// events, the COPY data of its log rows, its statements' arguments) is a
// few times its bytes, and at most two pieces are held at once: the one
// being folded and the one prepared ahead of it (readAhead).

// recordBytes is what a record weighs against BatchBytes.
func recordBytes(r kafka.Raw) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// pieces cuts b into runs of records of at most maxBytes each (a record
// larger than maxBytes is a run of its own). A piece's Next is, for each
// partition it holds records of, the offset after its last one; the last
// piece carries b.Next, which counts the batch's control records too. So
// each piece's offsets commit with its own effects, and after the last
// one they are where b would have left them.
func pieces(b kafka.Batch, maxBytes int) []kafka.Batch {
	if len(b.Records) == 0 {
		return []kafka.Batch{b}
	}
	var out []kafka.Batch
	start, size := 0, 0
	for i, r := range b.Records {
		n := recordBytes(r)
		if i > start && size+n > maxBytes {
			out = append(out, piece(b, start, i))
			start, size = i, 0
		}
		size += n
	}
	last := b
	last.Records = b.Records[start:]
	return append(out, last)
}

// piece is b's records [lo, hi), not the last piece of b.
func piece(b kafka.Batch, lo, hi int) kafka.Batch {
	p := kafka.Batch{Records: b.Records[lo:hi], Next: kafka.Positions{}}
	for _, r := range p.Records {
		p.Next[tp{Topic: r.Topic, Partition: r.Partition}] = r.Offset + 1
	}
	return p
}
