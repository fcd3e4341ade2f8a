package kafka

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	_, err := NewProducer(Config{})
	for _, want := range []string{"Brokers", "TransactionalID"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("NewProducer: %q does not report %s", err, want)
		}
	}
	_, err = NewReader(t.Context(), Config{Brokers: []string{"k1:9092"}}, ReadOptions{})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "Topics") {
		t.Errorf("NewReader: %q does not report Topics", err)
	}
}
