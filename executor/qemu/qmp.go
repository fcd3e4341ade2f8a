package qemu

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// QMP is a client of QEMU's machine protocol over a unix socket: one JSON
// object per line, commands answered by id, events interleaved with the
// answers. It negotiates capabilities at Dial, so a returned client is in
// command mode. It is safe for concurrent use.
type QMP struct {
	conn net.Conn

	wmu sync.Mutex // serialises writes of whole commands

	mu      sync.Mutex
	nextID  uint64
	pending map[string]chan qmpReply
	subs    map[chan Event]struct{}
	err     error // why the connection ended
	done    chan struct{}
}

// Event is one asynchronous QMP event, such as MIGRATION, STOP or RESUME.
type Event struct {
	Name string
	Data json.RawMessage
	At   time.Time
}

// CommandError is QMP's answer to a command that failed.
type CommandError struct {
	Command string
	Class   string
	Desc    string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("qmp %s: %s: %s", e.Command, e.Class, e.Desc)
}

type qmpReply struct {
	Return json.RawMessage `json:"return"`
	Error  *struct {
		Class string `json:"class"`
		Desc  string `json:"desc"`
	} `json:"error"`
}

type qmpMessage struct {
	qmpReply
	ID        json.RawMessage `json:"id"`
	QMP       json.RawMessage `json:"QMP"`
	Event     string          `json:"event"`
	Data      json.RawMessage `json:"data"`
	Timestamp *struct {
		Seconds      int64 `json:"seconds"`
		Microseconds int64 `json:"microseconds"`
	} `json:"timestamp"`
}

// DialQMP connects to the QMP socket at path, retrying until ctx ends
// (QEMU creates the socket a moment after it starts), reads the greeting
// and leaves negotiation mode.
func DialQMP(ctx context.Context, path string) (*QMP, error) {
	var d net.Dialer
	var conn net.Conn
	for {
		c, err := d.DialContext(ctx, "unix", path)
		if err == nil {
			conn = c
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: dial %s: %v", ErrQMP, path, errors.Join(err, ctx.Err()))
		case <-time.After(20 * time.Millisecond):
		}
	}
	q := &QMP{conn: conn, pending: map[string]chan qmpReply{}, subs: map[chan Event]struct{}{}, done: make(chan struct{})}
	greeted := make(chan struct{})
	go q.read(greeted)
	select {
	case <-greeted:
	case <-q.done:
		return nil, q.Err()
	case <-ctx.Done():
		q.Close()
		return nil, fmt.Errorf("%w: no greeting on %s: %v", ErrQMP, path, ctx.Err())
	}
	if err := q.Execute(ctx, "qmp_capabilities", nil, nil); err != nil {
		q.Close()
		return nil, err
	}
	return q, nil
}

// read dispatches every line: greeting, replies by id, events to every
// subscriber. It ends when the connection does, failing what waits.
func (q *QMP) read(greeted chan struct{}) {
	sc := bufio.NewScanner(q.conn)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var err error
	for sc.Scan() {
		var m qmpMessage
		if err = json.Unmarshal(sc.Bytes(), &m); err != nil {
			err = fmt.Errorf("%w: undecodable line %q: %v", ErrQMP, sc.Text(), err)
			break
		}
		switch {
		case m.QMP != nil:
			close(greeted)
		case m.Event != "":
			ev := Event{Name: m.Event, Data: m.Data, At: time.Now()}
			if m.Timestamp != nil {
				ev.At = time.Unix(m.Timestamp.Seconds, m.Timestamp.Microseconds*1000)
			}
			q.mu.Lock()
			for ch := range q.subs {
				// Events are hints: the driver also polls (oVirt's
				// "events plus polling when an event is lost"), so a slow
				// subscriber loses events rather than stalling replies.
				select {
				case ch <- ev:
				default:
				}
			}
			q.mu.Unlock()
		case m.ID != nil:
			q.mu.Lock()
			ch := q.pending[string(m.ID)]
			delete(q.pending, string(m.ID))
			q.mu.Unlock()
			if ch != nil {
				ch <- m.qmpReply
			}
		}
	}
	if err == nil {
		err = sc.Err()
	}
	if err == nil {
		err = errors.New("connection closed")
	}
	q.mu.Lock()
	q.err = fmt.Errorf("%w: %v", ErrQMPClosed, err)
	q.pending = map[string]chan qmpReply{}
	q.mu.Unlock()
	close(q.done)
	q.conn.Close()
}

// Execute runs cmd with args (nil for none) and decodes its return value
// into out (nil to ignore it). A QMP error comes back as *CommandError.
func (q *QMP) Execute(ctx context.Context, cmd string, args, out any) error {
	ch := make(chan qmpReply, 1)
	q.mu.Lock()
	if q.err != nil {
		q.mu.Unlock()
		return q.err
	}
	q.nextID++
	id := fmt.Sprintf("%d", q.nextID)
	q.pending[`"`+id+`"`] = ch
	q.mu.Unlock()
	forget := func() {
		q.mu.Lock()
		delete(q.pending, `"`+id+`"`)
		q.mu.Unlock()
	}

	msg := map[string]any{"execute": cmd, "id": id}
	if args != nil {
		msg["arguments"] = args
	}
	b, err := json.Marshal(msg)
	if err != nil {
		forget()
		return fmt.Errorf("%w: encode %s: %v", ErrQMP, cmd, err)
	}
	q.wmu.Lock()
	if dl, ok := ctx.Deadline(); ok {
		q.conn.SetWriteDeadline(dl)
	} else {
		q.conn.SetWriteDeadline(time.Time{})
	}
	_, err = q.conn.Write(append(b, '\n'))
	q.wmu.Unlock()
	if err != nil {
		forget()
		return fmt.Errorf("%w: send %s: %v", ErrQMPClosed, cmd, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return &CommandError{Command: cmd, Class: r.Error.Class, Desc: r.Error.Desc}
		}
		if out != nil && r.Return != nil {
			if err := json.Unmarshal(r.Return, out); err != nil {
				return fmt.Errorf("%w: decode %s: %v", ErrQMP, cmd, err)
			}
		}
		return nil
	case <-q.done:
		return fmt.Errorf("%s: %w", cmd, q.Err())
	case <-ctx.Done():
		forget()
		return fmt.Errorf("%w: %s: %v", ErrQMP, cmd, ctx.Err())
	}
}

// Subscribe returns a channel of the events that arrive from now on, and
// a function that ends the subscription. The channel holds 256 events;
// beyond that events are dropped (see read).
func (q *QMP) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, 256)
	q.mu.Lock()
	q.subs[ch] = struct{}{}
	q.mu.Unlock()
	return ch, func() {
		q.mu.Lock()
		delete(q.subs, ch)
		q.mu.Unlock()
	}
}

// Done is closed when the connection ends, typically because QEMU exited.
func (q *QMP) Done() <-chan struct{} { return q.done }

// Err says why the connection ended, nil while it is open.
func (q *QMP) Err() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// Close ends the connection; QEMU keeps running.
func (q *QMP) Close() error {
	err := q.conn.Close()
	<-q.done
	return err
}
