package kafka

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateReportsEveryProblem(t *testing.T) {
	err := Config{
		Brokers:        []string{"k1:9092", " "},
		DialTimeout:    -time.Second,
		MaxPollRecords: -1,
	}.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Validate = %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"Brokers[1]", "DialTimeout", "MaxPollRecords"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not report %s", err, want)
		}
	}
	if err := (Config{Brokers: []string{"k1:9092"}}).Validate(); err != nil {
		t.Fatalf("a config with only brokers should validate: %v", err)
	}
}

func TestConstructorsAddTheirRequirements(t *testing.T) {
	_, err := NewProducer(Config{})
	for _, want := range []string{"Brokers", "TransactionalID"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("NewProducer: %q does not report %s", err, want)
		}
	}
	_, err = NewConsumer(Config{Brokers: []string{"k1:9092"}}, "")
	for _, want := range []string{"group", "topics"} {
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("NewConsumer: %q does not report %s", err, want)
		}
	}
}

func TestRetry(t *testing.T) {
	failTimes := func(n int, calls *int) Handler {
		return func(context.Context, Record) error {
			*calls++
			if *calls <= n {
				return errBoom
			}
			return nil
		}
	}
	var calls int
	if err := Retry(3, time.Millisecond)(failTimes(2, &calls))(t.Context(), Record{}); err != nil || calls != 3 {
		t.Fatalf("Retry(3) over 2 failures = %v after %d calls, want nil after 3", err, calls)
	}
	calls = 0
	if err := Retry(1, time.Millisecond)(failTimes(5, &calls))(t.Context(), Record{}); !errors.Is(err, errBoom) || calls != 2 {
		t.Fatalf("Retry(1) over 5 failures = %v after %d calls, want errBoom after 2", err, calls)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls = 0
	err := Retry(5, time.Hour)(failTimes(5, &calls))(ctx, Record{})
	if !errors.Is(err, errBoom) || !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("Retry with a done context = %v after %d calls", err, calls)
	}
}
