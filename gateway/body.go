package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/drovehq/drove/gateway/wire"
)

// maxBody bounds a command's body; the largest real one (a group change of
// many instances) is far below it.
const maxBody = 1 << 20

// decodeBody decodes the JSON object in the request body into v strictly:
// unknown fields, wrong types, nulls, trailing data and malformed JSON are
// 400s naming the field. An empty body is allowed only when optional. A
// member may be null only when named in nullable (the OpenAPI document
// marks those nullable): encoding/json reads a null as "not given", so a
// {"reason": null} the document refuses was otherwise accepted as if the
// member were absent (found by schemathesis).
func decodeBody(c *gin.Context, v any, optional bool, nullable ...string) error {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &wire.Error{Status: http.StatusRequestEntityTooLarge, Code: codeBadRequest,
				Message: fmt.Sprintf("body larger than %d bytes", maxBody), Field: "body"}
		}
		return badRequest("body", "reading the body: "+err.Error())
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil
		}
		return badRequest("body", "body: missing (want a JSON object)")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("body", "body: data after the JSON object")
	}
	return checkValues(body, nullable)
}

// checkValues is a 400 naming the first null in the JSON body (already
// known to be valid) that is not a top-level member named in nullable, or
// the first string holding a NUL: names and reasons are text, and
// Postgres refuses such strings, so the refusal belongs to the client
// (schemathesis found a group change answered 500).
func checkValues(body []byte, nullable []string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	// path holds, per open object or array, the member or index read last;
	// inObject says which each is.
	var path []string
	var inObject []bool
	var index []int
	keyNext := false // an object's next token is a member name
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF: decodeBody has parsed this body already
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				path = append(path, "")
				inObject = append(inObject, d == '{')
				index = append(index, -1)
				keyNext = d == '{'
			default:
				path, inObject, index = path[:len(path)-1], inObject[:len(inObject)-1], index[:len(index)-1]
				keyNext = len(inObject) > 0 && inObject[len(inObject)-1]
			}
			continue
		}
		top := len(path) - 1
		if top < 0 {
			if tok == nil { // encoding/json leaves v as it was
				return badRequest("body", "body: want a JSON object, got null")
			}
			return nil // another bare value: decoding v refused it already
		}
		if keyNext {
			path[top], keyNext = tok.(string), false
			if strings.ContainsRune(path[top], 0) {
				return badRequest("body", "body: a member name holds a NUL character")
			}
			continue
		}
		if !inObject[top] {
			index[top]++
			path[top] = "[" + strconv.Itoa(index[top]) + "]"
		}
		field := func() string { return strings.ReplaceAll(strings.Join(path, "."), ".[", "[") }
		if tok == nil && !(top == 0 && slices.Contains(nullable, path[top])) {
			return badRequest(field(), field()+": null is not a value here (leave the member out instead)")
		}
		if str, ok := tok.(string); ok && strings.ContainsRune(str, 0) {
			return badRequest(field(), field()+": holds a NUL character")
		}
		keyNext = inObject[top]
	}
}

// jsonError turns encoding/json's errors into 400s that name the field.
func jsonError(err error) *wire.Error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return badRequest("body", fmt.Sprintf("body: malformed JSON at byte %d: %v", syntax.Offset, syntax))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("body", "body: malformed JSON: unexpected end")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return badRequest("body", fmt.Sprintf("body: want a JSON object, got %s", typ.Value))
		}
		field := indexRE.ReplaceAllString(typ.Field, "[$1]") // nodes.0 → nodes[0]
		return badRequest(field, fmt.Sprintf("%s: want %s, got %s", field, jsonKind(typ.Type.Kind().String()), typ.Value))
	}
	// DisallowUnknownFields reports `json: unknown field "x"` with no type.
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		name, uerr := strconv.Unquote(strings.TrimPrefix(msg, "json: unknown field "))
		if uerr != nil {
			name = strings.TrimPrefix(msg, "json: unknown field ")
		}
		return badRequest(name, fmt.Sprintf("%s: unknown field", name))
	}
	return badRequest("body", "body: "+err.Error())
}

var indexRE = regexp.MustCompile(`\.(\d+)`)

// jsonKind names a Go kind in JSON's words.
func jsonKind(k string) string {
	switch k {
	case "slice", "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "a number"
	case "struct", "map":
		return "an object"
	}
	return k
}

// plainText refuses a request whose path segments or query values are not
// valid UTF-8 or hold a NUL: names and ids are text, Postgres refuses such
// strings, and the refusal belongs to the client (400), not to the server.
func (g *Gateway) plainText(c *gin.Context) {
	bad := func(v string) bool { return !utf8.ValidString(v) || strings.ContainsRune(v, 0) }
	for _, p := range c.Params {
		if bad(p.Value) {
			g.fail(c, badRequest(p.Key, p.Key+": not valid UTF-8 text"))
			return
		}
	}
	for k, vs := range c.Request.URL.Query() {
		for _, v := range append(vs, k) {
			if bad(v) {
				g.fail(c, badRequest(k, "query parameter "+strconv.Quote(k)+": not valid UTF-8 text"))
				return
			}
		}
	}
	c.Next()
}
