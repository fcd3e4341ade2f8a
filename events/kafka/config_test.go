package kafka

import (
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
	_, err = NewReader(t.Context(), Config{Brokers: []string{"k1:9092"}}, ReadOptions{})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "Topics") {
		t.Errorf("NewReader: %q does not report Topics", err)
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	for n, want := range map[int]time.Duration{2: 100 * time.Millisecond, 3: 200 * time.Millisecond,
		4: 400 * time.Millisecond, 5: 800 * time.Millisecond, 6: time.Second, 9: time.Second} {
		if got := b.Wait(n); got != want {
			t.Errorf("Wait(%d) = %s, want %s", n, got, want)
		}
	}
	if got := (Backoff{Initial: time.Second}).Wait(8); got != 64*time.Second {
		t.Errorf("uncapped Wait(8) = %s, want 64s", got)
	}
	var tries, retries []int
	fatal := errors.New("fatal")
	err := Backoff{Initial: time.Millisecond}.Do(t.Context(), func(err error) bool { return err == errBoom },
		func(n int) error {
			tries = append(tries, n)
			if n < 3 {
				return errBoom
			}
			return fatal
		}, func(next int, err error, _ time.Duration) { retries = append(retries, next) })
	if err != fatal || len(tries) != 3 || len(retries) != 2 || retries[1] != 3 {
		t.Fatalf("Do = %v after tries %v, retries %v; want fatal after 3 tries, retries [2 3]", err, tries, retries)
	}
}
