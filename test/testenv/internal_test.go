package testenv

import (
	"regexp"
	"strings"
	"testing"
)

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://u:p@h:5432/postgres?sslmode=disable", "postgres://u:p@h:5432/test_x?sslmode=disable"},
		{"postgresql://u@h/", "postgresql://u@h/test_x"},
		{"host=h user=u dbname=postgres", "host=h user=u dbname=postgres dbname=test_x"},
	} {
		if got := withDatabase(tc.dsn, "test_x"); got != tc.want {
			t.Errorf("withDatabase(%q) = %q, want %q", tc.dsn, got, tc.want)
		}
	}
}

func TestTopicPrefixIsLegal(t *testing.T) {
	legal := regexp.MustCompile(`^test-[a-zA-Z0-9-]+-[0-9a-f]{8}-$`)
	for _, name := range []string{"TestX", "TestX/sub_case#01", strings.Repeat("TestLong", 40)} {
		p := topicPrefix(name)
		if !legal.MatchString(p) || len(p) > 80 {
			t.Errorf("topicPrefix(%q) = %q", name, p)
		}
	}
}
