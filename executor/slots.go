package executor

import "sync"

// slots admits opcodes to run, at most n at once, in the order they were
// dispatched. A buffered channel would bound them too, but goroutines
// blocked on one are not served in the order they were started, and a
// node should run its work in log order: the planner's per-node limits
// assume the first dispatched is the first to run.
type slots struct {
	mu      sync.Mutex
	free    int
	waiting []chan struct{}
}

func newSlots(n int) *slots { return &slots{free: n} }

// enqueue takes a place in line and returns a ticket, closed once a slot
// is granted. Call it in dispatch order.
func (s *slots) enqueue() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := make(chan struct{})
	if s.free > 0 && len(s.waiting) == 0 {
		s.free--
		close(t)
		return t
	}
	s.waiting = append(s.waiting, t)
	return t
}

// release gives a granted slot back, to the first in line.
func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiting) > 0 {
		close(s.waiting[0])
		s.waiting = s.waiting[1:]
		return
	}
	s.free++
}

// leave gives up a ticket: its place in line, or its slot if granted.
func (s *slots) leave(t chan struct{}) {
	s.mu.Lock()
	for i, w := range s.waiting {
		if w == t {
			s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
			s.mu.Unlock()
			return
		}
	}
	s.mu.Unlock()
	s.release()
}
