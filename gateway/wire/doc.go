// Package wire holds the shapes of Drove's HTTP API, once: every request
// body, answer, list page, stream line and error the gateway sends or
// reads, as Go structs with their JSON names. The gateway's handlers
// answer with them, gateway/client decodes into them, and
// gateway/openapi generates the OpenAPI document's schemas from them
// (`go generate ./gateway/openapi`), so a shape changes in one place.
//
// The package holds shapes only: no HTTP, no database, no behaviour.
// Tags the generator reads besides json:
//
//   - enum:"a,b,c": the values a string field takes;
//   - minimum:"n": the least value of a number;
//   - format:"date-time": a string that is an RFC 3339 time.
//
// A field's doc comment is its description in the document, a type's
// its schema's. A field without omitempty is always sent, so it is
// required; a pointer, slice or map without omitempty may be null.
//
// Some answers are the projector's view rows as they are, so their
// fields carry a db tag too: the view column the gateway reads the field
// from (pgx matches by it; the tag is a name, the package imports no
// database code).
package wire
