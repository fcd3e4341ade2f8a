package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// TestPages: each page is the shell naming its view and argument, with a
// policy that allows only the console's own script and styles.
func TestPages(t *testing.T) {
	for path, want := range map[string]string{
		"/console/":                   `data-page="cluster" data-arg=""`,
		"/console/nodes/node-a1":      `data-page="node" data-arg="node-a1"`,
		"/console/requests":           `data-page="requests"`,
		"/console/requests/r-1":       `data-page="request" data-arg="r-1"`,
		"/console/migrations/m-1":     `data-page="migration" data-arg="m-1"`,
		"/console/instances/web-1":    `data-page="instance" data-arg="web-1"`,
		"/console/settings":           `data-page="settings"`,
		"/console/audit":              `data-page="audit"`,
		"/console/requests/<b>x</b>/": `data-arg="&lt;b&gt;x&lt;/b&gt;"`,
	} {
		res, body := get(t, path)
		if res.StatusCode != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s = %d, want 200 with %s:\n%s", path, res.StatusCode, want, body)
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
	}
	if res, _ := get(t, "/console/nope/x/y"); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown page answered %d", res.StatusCode)
	}
}

// TestAssets: the script and the styles are embedded and served with
// their types.
func TestAssets(t *testing.T) {
	for path, typ := range map[string]string{"/console/assets/core.js": "javascript", "/console/assets/requests.js": "javascript", "/console/assets/console.css": "text/css"} {
		res, body := get(t, path)
		if res.StatusCode != http.StatusOK || !strings.Contains(res.Header.Get("Content-Type"), typ) || len(body) < 1000 {
			t.Errorf("GET %s = %d %q, %d bytes", path, res.StatusCode, res.Header.Get("Content-Type"), len(body))
		}
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/console/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST answered %d", rec.Code)
	}
}
