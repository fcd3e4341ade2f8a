package projector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// folder applies batches of records to one schema. It is shared by the live
// projector and by Replay, so both fold with exactly the same code.
type folder struct {
	schema string
	log    *slog.Logger
	m      *metrics

	// beforeCommit, when set, runs after a batch's statements and before
	// its commit; a test seam to crash a projector mid-batch.
	beforeCommit func(ctx context.Context) error
}

// tp names a partition.
type tp = kafka.TopicPartition

// item is one data record, decoded or not.
type item struct {
	rec kafka.Raw
	env events.Envelope
	p   events.Payload
	err error // why the record cannot be folded; nil when it can
}

// foldResult says what a batch did, for metrics and callers.
type foldResult struct {
	next        map[tp]int64 // next offset per partition, as committed
	records     int          // data records (not control records)
	applied     map[string]int
	duplicates  map[string]int
	undecodable []item
}

// decodeAll decodes recs, in order. Strict decoding is most of the
// projector's own CPU, so a large batch is split across up to cores
// goroutines; each record lands at its own index, so the order is the
// log's whatever the scheduling.
func decodeAll(recs []kafka.Raw, cores int) []item {
	items := make([]item, len(recs))
	workers := min(cores, len(recs)/decodeChunk)
	if workers < 2 {
		for i, r := range recs {
			items[i] = decodeRecord(r)
		}
		return items
	}
	var wg sync.WaitGroup
	per := (len(recs) + workers - 1) / workers
	for lo := 0; lo < len(recs); lo += per {
		hi := min(lo+per, len(recs))
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				items[i] = decodeRecord(recs[i])
			}
		})
	}
	wg.Wait()
	return items
}

// decodeChunk is the fewest records worth a goroutine of their own.
const decodeChunk = 64

// polled is one batch of the log, its records decoded, or the error
// reading it.
type polled struct {
	b     kafka.Batch
	items []item
	prep  *prepared // nil when prepare failed: the fold prepares again and reports why
	err   error
}

// readAhead reads r, cuts what it returns into pieces of at most maxBytes
// of records, decodes them and prepares their writes in a goroutine, one
// piece ahead of the caller: the next batch is fetched,
// decoded and prepared while Postgres runs the current one, so the two sides' CPU overlaps instead of
// adding up. It changes nothing the fold guarantees: a batch read ahead and
// not folded is only dropped, and where the views are in the log is still
// what the offsets in Postgres say. The channel closes after an error or
// the last batch (io.EOF, not sent). stop cancels the goroutine and waits
// for it; call it before closing r.
func readAhead(ctx context.Context, r *kafka.Reader, maxBytes int) (batches <-chan polled, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan polled)
	done := make(chan struct{})
	send := func(p polled) bool {
		select {
		case ch <- p:
			return true
		case <-ctx.Done():
			return false
		}
	}
	go func() {
		defer close(done)
		defer close(ch)
		for ctx.Err() == nil {
			b, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				send(polled{b: b, err: err})
				return
			}
			// Cut by bytes (pieces.go): each piece is decoded and
			// prepared only once the one before it is taken.
			for _, pb := range pieces(b, maxBytes) {
				p := polled{b: pb, items: decodeAll(pb.Records, aheadCores())}
				p.prep, _ = prepare(p.items, nil)
				if !send(p) {
					return
				}
			}
		}
	}()
	return ch, func() { cancel(); <-done }
}

// aheadCores is how many cores readAhead decodes on: all but one, which
// is left to the Postgres backend running the transaction readAhead
// works ahead of. On a small machine Postgres shares the cores, and a
// backend that waits for a core while the next batch decodes is the
// fold's whole critical path: on the projector bench, on 2 cores, the
// live catch-up was about 6 % faster decoding on one (the batch ahead
// was still ready before its transaction could start).
func aheadCores() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// decodeRecord decodes strictly (events.DecodeWithPayload) and checks the event is on its type's topic:
// an event on the wrong topic was ordered against the wrong neighbours.
func decodeRecord(r kafka.Raw) item {
	it := item{rec: r}
	// One decode: the payload Decode checks is the one folded.
	env, p, err := events.DecodeWithPayload(r.Value)
	if err != nil {
		it.err = err
		return it
	}
	if !events.OnItsTopic(env.Type, r.Topic) {
		want, _ := env.Topic()
		it.err = fmt.Errorf("%s event on topic %s, its type belongs on %s", env.Type, r.Topic, want)
		return it
	}
	it.env, it.p = env, p
	return it
}

// fold applies recs, in log order per partition, in one transaction: each
// new event's effects, its event_log row, the undecodable records, and next,
// the offset after the batch of every partition it touched (control
// records, which are not in recs, included). Either all of it commits or
// none does, so a crash anywhere neither loses nor doubles a row.
//
// If Postgres refuses a value of the batch (SQLSTATE class 22), the batch is
// folded again record by record, and the record Postgres refuses is set
// aside like an undecodable one.
func (f *folder) fold(ctx context.Context, db beginner, recs []kafka.Raw, next kafka.Positions) (foldResult, error) {
	return f.foldDecoded(ctx, db, recs, decodeAll(recs, runtime.GOMAXPROCS(0)), nil, next)
}

// foldDecoded is fold with recs already decoded (decodeAll), as readAhead
// hands them over, and their writes prepared if prep is not nil (prepare,
// assuming no event of the batch was logged before).
func (f *folder) foldDecoded(ctx context.Context, db beginner, recs []kafka.Raw, items []item, prep *prepared, next kafka.Positions) (foldResult, error) {
	var err error
	if prep == nil {
		if prep, err = prepare(items, nil); err != nil {
			return foldResult{}, err
		}
	}
	res, err := f.foldItems(ctx, db, items, next, prep)
	if duplicateLogged(err) && ctx.Err() == nil {
		// An event of the batch was logged before: fold it again, reading
		// which (eventlog.go).
		res, err = f.foldItems(ctx, db, items, next, nil)
	}
	if err == nil || !isDataError(err) || ctx.Err() != nil {
		return res, err
	}
	if len(recs) == 1 {
		items[0].err = fmt.Errorf("postgres refused the event: %w", err)
		return f.foldItems(ctx, db, items, next, nil)
	}
	// One by one: each record's own next offset, and the batch's (its
	// control records') with the last.
	total := foldResult{next: map[tp]int64{}, applied: map[string]int{}, duplicates: map[string]int{}}
	for i, r := range recs {
		one := kafka.Positions{{Topic: r.Topic, Partition: r.Partition}: r.Offset + 1}
		if i == len(recs)-1 {
			one = next
		}
		res, err := f.fold(ctx, db, []kafka.Raw{r}, one)
		if err != nil {
			return total, err
		}
		total.add(res)
	}
	return total, nil
}

func (r *foldResult) add(o foldResult) {
	for k, v := range o.next {
		r.next[k] = v
	}
	r.records += o.records
	for k, v := range o.applied {
		r.applied[k] += v
	}
	for k, v := range o.duplicates {
		r.duplicates[k] += v
	}
	r.undecodable = append(r.undecodable, o.undecodable...)
}

// foldItems folds items in one transaction, writing prep; with prep nil,
// it reads which of the batch's events are logged already and prepares
// the batch in the transaction.
func (f *folder) foldItems(ctx context.Context, db beginner, items []item, next kafka.Positions, prep *prepared) (foldResult, error) {
	res := foldResult{next: map[tp]int64{}, applied: map[string]int{}, duplicates: map[string]int{}}
	for k, n := range next {
		res.next[k] = n
	}
	start := time.Now()
	err := inTx(ctx, db, f.schema, func(tx pgx.Tx) error {
		if prep == nil {
			known, err := knownIDs(ctx, tx, items)
			if err != nil {
				return err
			}
			if prep, err = prepare(items, known); err != nil {
				return err
			}
		}
		// First the log: an event's effects run only when its row is
		// new, which is what makes a duplicate a no-op, even one
		// appended long after (a producer retrying an uncertain commit).
		if err := writeLog(ctx, tx, prep); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, s := range prep.stmts {
			b.Queue(s.sql, s.args...)
		}
		for k, next := range res.next {
			b.Queue(q("offset_set"), k.Topic, k.Partition, next)
		}
		if err := runBatch(ctx, tx, b, nil); err != nil {
			return err
		}
		if f.beforeCommit != nil {
			return f.beforeCommit(ctx)
		}
		return nil
	})
	if err != nil {
		return foldResult{}, err
	}
	// Committed: count and tell.
	for i, it := range items {
		res.records++
		switch {
		case it.err != nil:
			res.undecodable = append(res.undecodable, it)
			f.m.undecodable.WithLabelValues(it.rec.Topic).Inc()
			f.log.Error("projector: undecodable record set aside in undecodable_events",
				"schema", f.schema, "topic", it.rec.Topic, "partition", it.rec.Partition,
				"offset", it.rec.Offset, "err", it.err)
		case prep.fresh[i]:
			res.applied[it.env.Type]++
			f.m.applied.WithLabelValues(it.env.Type).Inc()
		default:
			res.duplicates[it.env.Type]++
			f.m.duplicates.WithLabelValues(it.env.Type).Inc()
		}
	}
	f.m.apply.Observe(time.Since(start).Seconds())
	f.m.batch.Observe(float64(len(items)))
	return res, nil
}

// runBatch sends b and reads every result in order, handing each
// statement's affected row count to row when it is not nil. It stops at
// the first error: the transaction is aborted from there on anyway.
func runBatch(ctx context.Context, tx pgx.Tx, b *pgx.Batch, row func(i int, rows int64)) error {
	if b.Len() == 0 {
		return nil
	}
	br := tx.SendBatch(ctx, b)
	for i := range b.Len() {
		tag, err := br.Exec()
		if err != nil {
			_ = br.Close()
			return fmt.Errorf("statement %d of %d: %w", i+1, b.Len(), err)
		}
		if row != nil {
			row(i, tag.RowsAffected())
		}
	}
	return br.Close()
}
