package wire

import "strconv"

// ErrorAnswer is every error answer: 4xx and 5xx alike.
type ErrorAnswer struct {
	Error *Error `json:"error"`
}

// Error says what went wrong; Code is stable, Message is for people.
type Error struct {
	// Status is the HTTP status the error is answered with.
	Status int `json:"-"`
	// stable; clients branch on it
	Code    string `json:"code" enum:"bad_request,not_found,conflict,active_request,migrating,over_budget,unavailable,internal,too_slow,too_many_watchers,unauthorized,forbidden,client_gone,not_implemented"`
	Message string `json:"message"`
	// the body field, path or query parameter at fault
	Field string `json:"field,omitempty"`
	// Instance and Request name what a conflict is about, when it is.
	Instance string `json:"instance,omitempty"`
	Request  string `json:"request,omitempty"`
	// the per-instance migration a conflict is about
	Migration string `json:"migration,omitempty"`
}

// Error reads as the client commands print it: the status, the message
// and the field at fault.
func (e *Error) Error() string {
	s := strconv.Itoa(e.Status) + " " + e.Message
	if e.Field != "" {
		s += " (field " + e.Field + ")"
	}
	return s
}

// Health is GET /healthz: each dependency's state.
type Health struct {
	Status string `json:"status" enum:"ok,unavailable"`
	// postgres, kafka and, under a supervisor, each part's state
	Checks map[string]any `json:"checks"`
}
