package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/drovehq/drove/events/retry"
)

// Sentinel errors. Returned errors wrap one of these and keep the franz-go
// or events error underneath, so errors.Is works on either. Those no
// restart cures are marked retry.Permanent.
var (
	// ErrInvalidConfig is returned by constructors when the Config does not
	// validate; the message lists every problem.
	ErrInvalidConfig = retry.Permanent(errors.New("kafka: invalid config"))

	// ErrClosed is returned when the Producer or Reader was closed.
	ErrClosed = errors.New("kafka: client closed")

	// ErrAborted is returned by Append when the transaction was aborted:
	// none of its events will ever be visible to read-committed readers, so
	// the whole append may be retried.
	ErrAborted = errors.New("kafka: transaction aborted")

	// ErrUncertain is returned by Append when the commit's outcome could not
	// be confirmed: the events may or may not be in the log. Retrying is
	// safe only because consumers deduplicate on event id.
	ErrUncertain = errors.New("kafka: transaction outcome unknown")

	// ErrFenced is returned when another producer with the same
	// transactional id has taken over. This producer is a zombie and must
	// stop; retrying would fail the same way.
	ErrFenced = retry.Permanent(errors.New("kafka: producer fenced by a newer instance"))

	// ErrTopicConfig is returned by EnsureTopics when an existing topic's
	// configuration would delete events (finite retention, compaction) and
	// Config.AllowFiniteRetention does not allow it: running on would lose
	// the source of truth.
	ErrTopicConfig = retry.Permanent(errors.New("kafka: topic configuration"))

	// ErrRecordTooLarge is returned by Append, before anything is written,
	// for an event larger than Config.MaxRecordBytes.
	ErrRecordTooLarge = errors.New("kafka: record too large")

	// ErrUnknownTopic is returned when a topic does not exist; create topics
	// with EnsureTopics before use.
	ErrUnknownTopic = errors.New("kafka: unknown topic")

	// ErrAuth is returned when the brokers refuse the client's SASL
	// credentials or mechanism; the message names the user and mechanism,
	// never the password. Retrying will not help.
	ErrAuth = errors.New("kafka: SASL authentication refused")

	// ErrDenied is returned when the brokers' authorizer refused the
	// client's principal what it asked (Kafka's ACLs): to write a topic
	// another service owns, read one it may not, use a group or a
	// transactional id not granted to it. Retrying will not help; the
	// message names the resource's error (TOPIC_AUTHORIZATION_FAILED, ...).
	ErrDenied = errors.New("kafka: not authorized by the brokers' ACLs")

	// ErrTLS is returned when no TLS session with a broker could be made:
	// its certificate is not from the configured CA, or it speaks no TLS.
	ErrTLS = errors.New("kafka: TLS with the broker failed")

	// ErrUndecodable is returned when a record in the log is not an event
	// this build accepts (see events.Decode). It also wraps the events
	// error, so errors.Is(err, events.ErrUnknownType) tells a newer schema
	// from garbage.
	ErrUndecodable = retry.Permanent(errors.New("kafka: undecodable record"))
)

// IsRetryable reports whether repeating the failed operation may succeed:
// an aborted append, a franz-go error Kafka marks retriable, a broker that
// cannot be reached or dropped the connection (a broker restarting), or a
// consumer group session lost meanwhile. A fenced producer's append is
// aborted too, but no retry can succeed, so fencing is checked first;
// configuration, topic settings and undecodable records need an operator.
func IsRetryable(err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrAuth), errors.Is(err, ErrTLS), errors.Is(err, ErrDenied):
		return false
	case errors.Is(err, ErrFenced), errors.Is(err, ErrClosed),
		errors.Is(err, ErrInvalidConfig), errors.Is(err, ErrUndecodable),
		errors.Is(err, ErrTopicConfig), errors.Is(err, ErrRecordTooLarge),
		errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, ErrAborted), isNetwork(err),
		errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.IllegalGeneration),
		errors.Is(err, kerr.FencedInstanceID), errors.Is(err, kerr.UnknownProducerID),
		errors.Is(err, kerr.InvalidProducerIDMapping), errors.Is(err, kerr.InvalidTxnState),
		errors.Is(err, kerr.BrokerNotAvailable), isFirstReadEOF(err):
		return true
	}
	return kerr.IsRetriable(err)
}

// isNetwork reports a transport failure: refused, reset or timed-out
// connections and streams cut short, as a broker restart causes.
func isNetwork(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, context.DeadlineExceeded)
}

// translate maps franz-go errors onto the sentinels, keeping the original.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kgo.ErrClientClosed):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	case errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		// Still ErrFenced, as before ACLs: the producer must stop either way.
		return fmt.Errorf("%w: %w: %w", ErrDenied, ErrFenced, err)
	case errors.Is(err, kerr.ProducerFenced),
		errors.Is(err, kerr.InvalidProducerEpoch):
		return fmt.Errorf("%w: %w", ErrFenced, err)
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.ClusterAuthorizationFailed):
		return fmt.Errorf("%w: %w", ErrDenied, err)
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		return fmt.Errorf("%w: %w", ErrUnknownTopic, err)
	}
	return err
}

// IsRefused reports whether the log refused an append for what its records
// are — one too large for the client or the broker, or one the broker
// finds invalid — rather than for the state of the broker or the
// connection: the same records will never be taken, while other records
// may. A writer then gives up on the decision those records carry, not on
// the log.
func IsRefused(err error) bool {
	return errors.Is(err, ErrRecordTooLarge) || errors.Is(err, kerr.MessageTooLarge) ||
		errors.Is(err, kerr.RecordListTooLarge) || errors.Is(err, kerr.InvalidRecord) ||
		errors.Is(err, kerr.CorruptMessage)
}

// isFirstReadEOF is franz-go's word for a connection the broker closed
// before answering, as it does while shutting down.
func isFirstReadEOF(err error) bool {
	var e *kgo.ErrFirstReadEOF
	return errors.As(err, &e)
}
