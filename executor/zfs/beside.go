package zfs

// beside runs f in a goroutine and returns the wait for its result. A
// move's two nodes work at once this way: the local side runs here while
// the caller asks the target for its side, then takes both answers. The
// wait must be called, so that nothing f does outlives its caller.
func beside[T any](f func() (T, error)) (wait func() (T, error)) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	return func() (T, error) {
		r := <-done
		return r.v, r.err
	}
}
