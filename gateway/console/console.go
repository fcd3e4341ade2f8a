package console

import (
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// Prefix is where the console is served.
const Prefix = "/console/"

//go:embed assets page.html
var files embed.FS

var page = template.Must(template.ParseFS(files, "page.html"))

// view is one page: which script view draws it and the name or id it is
// about.
type view struct {
	Page, Arg, Title string
}

// route maps a path below Prefix to a page; ok is false for none.
func route(p string) (v view, ok bool) {
	parts := strings.SplitN(strings.Trim(p, "/"), "/", 2)
	arg := ""
	if len(parts) == 2 {
		arg = parts[1]
	}
	switch {
	case parts[0] == "" && arg == "":
		return view{"cluster", "", "Cluster"}, true
	case parts[0] == "nodes" && arg != "":
		return view{"node", arg, "Node " + arg}, true
	case parts[0] == "requests" && arg == "":
		return view{"requests", "", "Requests"}, true
	case parts[0] == "requests":
		return view{"request", arg, "Request " + arg}, true
	case parts[0] == "migrations" && arg == "":
		return view{"migrations", "", "Migrations"}, true
	case parts[0] == "migrations":
		return view{"migration", arg, "Migration " + arg}, true
	case parts[0] == "instances" && arg == "":
		return view{"instances", "", "Instances"}, true
	case parts[0] == "instances":
		return view{"instance", arg, "Instance " + arg}, true
	case parts[0] == "settings" && arg == "":
		return view{"settings", "", "Settings"}, true
	case parts[0] == "audit" && arg == "":
		return view{"audit", "", "Audit trail"}, true
	}
	return view{}, false
}

// Handler serves the console's pages and assets. Mount it at Prefix.
func Handler() http.Handler {
	assets, err := fs.Sub(files, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	static := http.StripPrefix(Prefix+"assets/", http.FileServerFS(assets))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		// The script and styles are our own; nothing inline, nothing from
		// elsewhere.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		rest := strings.TrimPrefix(path.Clean(r.URL.Path), strings.TrimSuffix(Prefix, "/"))
		if strings.HasPrefix(rest, "/assets/") {
			w.Header().Set("Cache-Control", "no-cache")
			static.ServeHTTP(w, r)
			return
		}
		v, ok := route(rest)
		status := http.StatusOK
		if !ok {
			v, status = view{"missing", rest, "Not found"}, http.StatusNotFound
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_ = page.Execute(w, v) // a write error means the client left
	})
}
