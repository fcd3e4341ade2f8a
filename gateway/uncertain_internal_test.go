package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// An unconfirmed append of a request points at the request; one of a
// change that is no request (an instance's user-migration override, as
// test/partition saw with a broker cut off) points at no empty request.
func TestUncertainAppendPointsWhereToLook(t *testing.T) {
	r := uncertainAppend("r1")
	if r.Status != http.StatusServiceUnavailable || r.Request != "r1" || !strings.Contains(r.Message, "GET /v1/requests/r1") {
		t.Fatalf("a request's unconfirmed append: %+v", r)
	}
	c := uncertainAppend("")
	if c.Status != http.StatusServiceUnavailable || c.Request != "" || strings.Contains(c.Message, "/v1/requests/") ||
		!strings.Contains(c.Message, "read it back") {
		t.Fatalf("a change's unconfirmed append: %+v", c)
	}
}
