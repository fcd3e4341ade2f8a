package retry

import "errors"

// ErrPermanent is wrapped by every error that no retry or restart cures:
// a configuration that does not validate, a topic kept with settings that
// would lose events, an event this build cannot decode, a schema that is
// not this build's, a producer fenced by a newer instance. A service's
// own sentinel wraps it (see [Permanent]) and callers keep matching the
// service's sentinel; deploy/supervise stops on errors.Is(err, ErrPermanent).
var ErrPermanent = errors.New("permanent: no retry cures it")

// Permanent marks err as one no retry cures. The result reads as err
// alone and errors.Is finds both err and ErrPermanent in it, so a
// package's sentinel can be declared as
//
//	var ErrInvalidConfig = retry.Permanent(errors.New("projector: invalid config"))
//
// and both errors.Is(err, ErrInvalidConfig) and errors.Is(err,
// retry.ErrPermanent) hold for what wraps it. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanent{err}
}

type permanent struct{ err error }

func (p *permanent) Error() string   { return p.err.Error() }
func (p *permanent) Unwrap() []error { return []error{p.err, ErrPermanent} }
