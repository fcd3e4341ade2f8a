package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/drovehq/drove/events"
)

// Record is one decoded event with its place in the log.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Event     events.Envelope
}

func (r Record) String() string {
	return fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset)
}

// TopicPartition names one partition of one topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// Positions are where a reader is in the log: for each partition, the next
// offset to read. Control records (transaction markers) take offsets too,
// so a reader that has read a partition to its end is positioned at the
// end offset the broker lists, not one past its last event.
type Positions map[TopicPartition]int64

// ReadOptions say what a Reader reads.
type ReadOptions struct {
	// Topics are read in full (every partition) unless Partitions limits
	// them. Required.
	Topics []string
	// Partitions, when it has an entry for a topic, limits reading that
	// topic to those partitions: an executor reads only its node's
	// partition of drove.opcodes.
	Partitions map[string][]int32
	// Keys, when it has an entry for a topic, limits reading that topic to
	// the partitions those keys land in (PartitionOf, with the topic's
	// partition count): a reader of one node's work names the node.
	Keys map[string][]string
	// From is where each partition starts; a partition it does not list
	// starts at the start of its log (a new reader of an event log sees
	// its whole history).
	From Positions
	// Follow keeps reading after the end: Next waits for new events. Without
	// it Next returns io.EOF once every partition is read up to the end it
	// had when the Reader opened (or its To).
	Follow bool
	// To, without Follow, says where to stop reading a partition instead
	// of the end it had when the Reader opened: a rebuild reads exactly
	// what the views it is compared with had read (projector.Replay). An
	// offset past the end waits for records to reach it.
	To Positions
	// MaxRecords bounds the records (control records included) of one
	// batch. Default Config.MaxPollRecords.
	MaxRecords int
	// MaxFetchBytes, when set, bounds the bytes of one fetch (as stored:
	// compressed) the client buffers, at least Config.MaxRecordBytes: a
	// reader that folds what it reads holds one fetch ahead of it, and
	// franz-go's default (50 MiB compressed) can be several hundred MiB
	// of records. Default franz-go's.
	MaxFetchBytes int
	// MaxWait, when set, makes Next return an empty batch after waiting
	// this long with nothing to read, so a follower can act on time (the
	// planner service's tick).
	MaxWait time.Duration
	// Refresh, when set with Follow and no Partitions, re-lists every
	// partition's end this often (Ends, for lag) and starts reading
	// partitions added to a topic since the Reader opened, from their
	// start.
	Refresh time.Duration
}

// Raw is one data record as the log holds it, not yet decoded: for readers
// that decode themselves (the projector keeps what does not decode) or
// hash the stored bytes (the notary's chain).
type Raw struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
	Time      time.Time
}

// Header is one header of a record, as stored.
type Header struct {
	Key   string
	Value []byte
}

func (r Raw) String() string { return fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset) }

// Decode decodes r strictly (events.Decode).
func (r Raw) Decode() (Record, error) {
	e, err := events.Decode(r.Value)
	if err != nil {
		return Record{}, fmt.Errorf("%w: %s: %w", ErrUndecodable, r, err)
	}
	return Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Event: e}, nil
}

// Batch is what one Next read: records of possibly many partitions, in log
// order within each partition.
type Batch struct {
	// Records are the data records; control records are left out.
	Records []Raw
	// Next is the position after this batch of every partition it touched,
	// control records included. A reader that stores its position with the
	// batch's effects (the projector) resumes exactly after it.
	Next Positions
	// CaughtUp is true from the batch that reaches, in every partition,
	// the end it had when the Reader opened: the reader has seen the log
	// as it stood then.
	CaughtUp bool
}

// Decode decodes every record of b strictly; the first that does not
// decode fails the whole batch.
func (b Batch) Decode() ([]Record, error) {
	out := make([]Record, 0, len(b.Records))
	for _, r := range b.Records {
		rec, err := r.Decode()
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// FetchStats count what a Reader fetched from the brokers, control records
// included: what one reader costs the cluster.
type FetchStats struct {
	Records int64
	Bytes   int64 // compressed, as on the wire
}

// Reader reads partitions of topics from given positions, read-committed,
// in one of two ways: up to the end each partition had when it opened
// (replay, audit), or on past it for as long as it runs (Follow). It is
// the one way Drove reads its log; each caller keeps its own position
// (Batch.Next) wherever its effects live. A Reader is not safe for
// concurrent Next calls.
type Reader struct {
	cfg   Config
	opts  ReadOptions
	cl    *kgo.Client
	stats *statsHook

	pending map[TopicPartition]int64 // partitions not yet read to their opening end
	next    Positions
	caught  bool
	refresh time.Time

	mu   sync.Mutex
	ends Positions // last known end (last stable offset) per partition
}

// NewReader lists the partitions to read and their ends, then returns a
// Reader positioned at opts.From (or their starts).
func NewReader(ctx context.Context, cfg Config, opts ReadOptions) (*Reader, error) {
	if err := cfg.validate(false); err != nil {
		return nil, err
	}
	if len(opts.Topics) == 0 {
		return nil, fmt.Errorf("%w: ReadOptions.Topics: none", ErrInvalidConfig)
	}
	cfg = cfg.withDefaults()
	if opts.MaxRecords <= 0 {
		opts.MaxRecords = cfg.MaxPollRecords
	}
	stats := &statsHook{by: map[string]*FetchStats{}}
	extra := []kgo.Opt{kgo.WithHooks(stats)}
	if opts.MaxFetchBytes > 0 {
		extra = append(extra, kgo.FetchMaxBytes(int32(max(opts.MaxFetchBytes, cfg.MaxRecordBytes))))
	}
	cl, err := NewClient(cfg, extra...)
	if err != nil {
		return nil, err
	}
	r := &Reader{cfg: cfg, opts: opts, cl: cl, stats: stats, pending: map[TopicPartition]int64{},
		next: Positions{}, ends: Positions{}, refresh: time.Now()}
	starts, ends, err := cfg.listBounds(ctx, kadm.NewClient(cl), opts.Topics)
	if err != nil {
		cl.Close()
		return nil, cfg.explain(err)
	}
	r.limitToKeys(ends)
	from := map[string]map[int32]kgo.Offset{}
	for tp, end := range ends {
		if !r.selected(tp) {
			continue
		}
		at, ok := opts.From[tp]
		if !ok || at < starts[tp] {
			if ok {
				cfg.Logger.Error("kafka reader: the log no longer holds the position asked for; reading from its start",
					"partition", tp, "position", at, "start", starts[tp])
			}
			at = starts[tp]
		}
		r.next[tp], r.ends[tp] = at, end
		if to, ok := opts.To[tp]; ok && !opts.Follow {
			end = to
		}
		if end > at {
			r.pending[tp] = end
		}
		if opts.Follow || end > at {
			addOffset(from, tp, kgo.NewOffset().At(at))
		}
	}
	r.caught = len(r.pending) == 0
	r.cl.AddConsumePartitions(cfg.wireOffsets(from))
	return r, nil
}

// limitToKeys turns Keys into Partitions, now that the partition counts
// are known.
func (r *Reader) limitToKeys(ends Positions) {
	if len(r.opts.Keys) == 0 {
		return
	}
	counts := map[string]int{}
	for tp := range ends {
		counts[tp.Topic]++
	}
	ps := maps.Clone(r.opts.Partitions)
	if ps == nil {
		ps = map[string][]int32{}
	}
	for topic, keys := range r.opts.Keys {
		for _, k := range keys {
			if p := PartitionOf(topic, k, counts[topic]); !slices.Contains(ps[topic], p) {
				ps[topic] = append(ps[topic], p)
			}
		}
	}
	r.opts.Partitions = ps
}

// Partitions are the partitions the Reader reads, per topic.
func (r *Reader) Partitions() map[string][]int32 {
	out := map[string][]int32{}
	for tp := range r.next {
		out[tp.Topic] = append(out[tp.Topic], tp.Partition)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// selected reports whether the options ask for tp.
func (r *Reader) selected(tp TopicPartition) bool {
	ps, limited := r.opts.Partitions[tp.Topic]
	return !limited || slices.Contains(ps, tp.Partition)
}

// Next returns the next batch. It waits for records unless MaxWait passes
// first (then the batch is empty); without Follow it returns io.EOF once
// everything asked for has been returned. A fetch error a retry may cure
// comes back as is (IsRetryable): the Reader is still usable.
func (r *Reader) Next(ctx context.Context) (Batch, error) {
	if !r.opts.Follow && len(r.pending) == 0 {
		return Batch{CaughtUp: true, Next: Positions{}}, io.EOF
	}
	r.maybeRefresh(ctx)
	pctx := ctx
	if r.opts.MaxWait > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, r.opts.MaxWait)
		defer cancel()
	}
	fs := r.cl.PollRecords(pctx, r.opts.MaxRecords)
	if err := ctx.Err(); err != nil {
		return Batch{}, err
	}
	if fs.IsClientClosed() {
		return Batch{}, ErrClosed
	}
	b := Batch{Next: Positions{}}
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.Topic == "" || p.Partition < 0 {
			return // an error of the whole poll (its end at MaxWait): fetchErr's
		}
		tp := TopicPartition{r.cfg.local(p.Topic), p.Partition}
		for _, rec := range p.Records {
			if end, ok := r.pending[tp]; !r.opts.Follow && (!ok || rec.Offset >= end) {
				continue // past the end we were asked for
			}
			if end, ok := r.pending[tp]; ok && rec.Offset >= end-1 {
				delete(r.pending, tp)
			}
			b.Next[tp] = rec.Offset + 1
			if !rec.Attrs.IsControl() {
				b.Records = append(b.Records, rawOf(rec, tp.Topic))
			}
		}
		if p.LastStableOffset >= 0 {
			r.mu.Lock()
			r.ends[tp] = max(r.ends[tp], p.LastStableOffset)
			r.mu.Unlock()
		}
	})
	maps.Copy(r.next, b.Next)
	if len(r.pending) == 0 {
		r.caught = true
	}
	b.CaughtUp = r.caught
	return b, r.fetchErr(fs)
}

// rawOf is a fetched data record of topic (the callers' name) as Raw.
func rawOf(rec *kgo.Record, topic string) Raw {
	r := Raw{Topic: topic, Partition: rec.Partition, Offset: rec.Offset,
		Key: rec.Key, Value: rec.Value, Time: rec.Timestamp}
	for _, h := range rec.Headers {
		r.Headers = append(r.Headers, Header{Key: h.Key, Value: h.Value})
	}
	return r
}

// fetchErr is the poll's fetch errors, translated. The end of MaxWait is
// not one; data loss (the log was truncated under the reader) is logged
// loudly, because franz-go has already moved on to what remains.
func (r *Reader) fetchErr(fs kgo.Fetches) error {
	var errs []error
	fs.EachError(func(topic string, partition int32, err error) {
		var loss *kgo.ErrDataLoss
		switch {
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		case errors.As(err, &loss):
			r.cfg.Logger.Error("kafka reader: data loss in the log", "topic", topic, "partition", partition, "err", err)
		default:
			errs = append(errs, fmt.Errorf("kafka: fetch %s/%d: %w", r.cfg.local(topic), partition, translate(err)))
		}
	})
	return errors.Join(errs...)
}

// maybeRefresh re-lists the ends and picks up new partitions (Refresh).
func (r *Reader) maybeRefresh(ctx context.Context) {
	if !r.opts.Follow || r.opts.Refresh <= 0 || time.Since(r.refresh) < r.opts.Refresh {
		return
	}
	r.refresh = time.Now()
	_, ends, err := r.cfg.listBounds(ctx, kadm.NewClient(r.cl), r.opts.Topics)
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.Warn("kafka reader: list end offsets", "err", err)
		}
		return
	}
	added := map[string]map[int32]kgo.Offset{}
	r.mu.Lock()
	for tp, end := range ends {
		if !r.selected(tp) {
			continue
		}
		if _, known := r.ends[tp]; !known {
			if _, limited := r.opts.Partitions[tp.Topic]; !limited {
				r.next[tp] = 0
				addOffset(added, tp, kgo.NewOffset().AtStart())
			}
		}
		r.ends[tp] = max(r.ends[tp], end)
	}
	r.mu.Unlock()
	if len(added) > 0 {
		r.cfg.Logger.Info("kafka reader: new partitions", "partitions", added)
		r.cl.AddConsumePartitions(r.cfg.wireOffsets(added))
	}
}

// CaughtUp reports whether the Reader has read every partition up to the
// end it had when it opened (true at once when there was nothing to read).
func (r *Reader) CaughtUp() bool { return r.caught }

// Position is where the Reader is: the next offset of every partition it
// reads.
func (r *Reader) Position() Positions { return maps.Clone(r.next) }

// Ends are the last known end (last stable offset) of every partition the
// Reader reads: at opening, then as fetches and refreshes report them.
// Ends minus Position is the lag. Safe to call concurrently with Next.
func (r *Reader) Ends() Positions {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.ends)
}

// Fetched is what the Reader fetched so far, per topic. Safe to call
// concurrently with Next.
func (r *Reader) Fetched() map[string]FetchStats {
	out := map[string]FetchStats{}
	for t, s := range r.stats.snapshot() {
		out[r.cfg.local(t)] = s
	}
	return out
}

// Close releases the Reader's client.
func (r *Reader) Close() { r.cl.Close() }

// NewClient returns a franz-go client of cfg: its brokers, client id,
// timeouts, fetch sizes, TLS and SASL, plus opts. Every client of Drove's
// log is made here, so every one is secured and sized alike.
func NewClient(cfg Config, opts ...kgo.Opt) (*kgo.Client, error) {
	if err := cfg.validate(false); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cl, err := kgo.NewClient(append(cfg.readerOpts(), opts...)...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return cl, nil
}

// readerOpts are clientOpts for reading the log as Drove does: committed
// data only, and control records kept, because a transaction's commit
// marker takes an offset too and seeing it is how a reader knows it has
// reached an end.
func (c Config) readerOpts() []kgo.Opt {
	return append(c.clientOpts(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		noFetchSessions,
	)
}

// noFetchSessions turns off incremental fetch sessions. franz-go (1.22.2
// and 1.22.3) reads a source's session id on Close without the lock its
// fetch loop holds when it bumps the session, a data race the race
// detector reports (TestBrokerKeepsStateAcrossRestarts, about one run in
// thirty). A session only trims the partition list from each fetch
// request: a few kilobytes at Drove's partition counts.
var noFetchSessions = kgo.DisableFetchSessions()

// listBounds lists the log start and the last stable offset of every
// partition of topics.
func (c Config) listBounds(ctx context.Context, adm *kadm.Client, topics []string) (starts, ends Positions, err error) {
	ls, err := adm.ListStartOffsets(ctx, c.wires(topics)...)
	if err == nil {
		err = ls.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("kafka: start offsets of %v: %w", topics, translate(err))
	}
	le, err := adm.ListCommittedOffsets(ctx, c.wires(topics)...)
	if err == nil {
		err = le.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("kafka: end offsets of %v: %w", topics, translate(err))
	}
	starts, ends = Positions{}, Positions{}
	for _, t := range topics {
		if len(le[c.wire(t)]) == 0 {
			return nil, nil, fmt.Errorf("kafka: %s: %w", t, ErrUnknownTopic)
		}
	}
	le.Each(func(o kadm.ListedOffset) { ends[TopicPartition{c.local(o.Topic), o.Partition}] = o.Offset })
	ls.Each(func(o kadm.ListedOffset) { starts[TopicPartition{c.local(o.Topic), o.Partition}] = o.Offset })
	return starts, ends, nil
}

// wireOffsets is m keyed by the broker's topic names.
func (c Config) wireOffsets(m map[string]map[int32]kgo.Offset) map[string]map[int32]kgo.Offset {
	out := make(map[string]map[int32]kgo.Offset, len(m))
	for t, ps := range m {
		out[c.wire(t)] = ps
	}
	return out
}

func addOffset(m map[string]map[int32]kgo.Offset, tp TopicPartition, o kgo.Offset) {
	if m[tp.Topic] == nil {
		m[tp.Topic] = map[int32]kgo.Offset{}
	}
	m[tp.Topic][tp.Partition] = o
}

// statsHook counts fetched batches (kgo.HookFetchBatchRead).
type statsHook struct {
	mu sync.Mutex
	by map[string]*FetchStats
}

func (h *statsHook) OnFetchBatchRead(_ kgo.BrokerMetadata, topic string, _ int32, m kgo.FetchBatchMetrics) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.by[topic]
	if s == nil {
		s = &FetchStats{}
		h.by[topic] = s
	}
	s.Records += int64(m.NumRecords)
	s.Bytes += int64(m.CompressedBytes)
}

func (h *statsHook) snapshot() map[string]FetchStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]FetchStats, len(h.by))
	for t, s := range h.by {
		out[t] = *s
	}
	return out
}
