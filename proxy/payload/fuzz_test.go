package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
)

// oracle says whether Parse must accept data, using encoding/json as the reference: valid JSON,
// valid UTF-8 (json.Valid lets invalid bytes through inside strings), an object at the top
// level, no duplicate top-level keys after decoding, and nesting within MaxDepth.
func oracle(data []byte) bool {
	if !json.Valid(data) || !utf8.Valid(data) {
		return false
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); t[0] != '{' {
		return false
	}
	if maxDepth(data) > MaxDepth {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.Token() // '{'
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			panic(err)
		}
		key := tok.(string)
		if seen[key] {
			return false
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			panic(err)
		}
	}
	return true
}

// maxDepth returns the deepest nesting of valid JSON data.
func maxDepth(data []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// checkOracle fails the test when Parse disagrees with the oracle about data, and otherwise
// checks that a successful Parse round-trips through Build.
func checkOracle(t *testing.T, data []byte) {
	t.Helper()
	o, err := Parse(data)
	if want := oracle(data); (err == nil) != want {
		t.Fatalf("Parse(%q) error = %v, oracle accepts = %v", truncateForLog(data), err, want)
	}
	checkIncremental(t, data, o, err)
	if err != nil {
		var pe *Error
		if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(data) {
			t.Fatalf("bad error %#v for %q", err, truncateForLog(data))
		}
		if len(pe.Msg) > 100 {
			t.Fatalf("error message too long: %q", pe.Msg)
		}
		return
	}
	out := Build(nil, o, nil)
	if got, want := decodeAny(t, out), decodeAny(t, data); !reflect.DeepEqual(got, want) {
		t.Fatalf("Build(Parse(%q)) = %q decodes differently", truncateForLog(data), truncateForLog(out))
	}
	if (o.raw != nil) != bytes.Equal(out, data) {
		t.Fatalf("Parse(%q) says compact = %v, but Build gives %q", truncateForLog(data), o.raw != nil, truncateForLog(out))
	}
	for _, m := range o.Members {
		if k, err := DecodeString(m.RawKey); err != nil || k != m.Key {
			t.Fatalf("key %q decodes to %q, %v", m.RawKey, k, err)
		}
		if !json.Valid(m.Value) || KindOf(m.Value) == KindInvalid {
			t.Fatalf("member value %q is not one JSON value", truncateForLog(m.Value))
		}
		if v, ok := o.Get(m.Key); !ok || !bytes.Equal(v, m.Value) {
			t.Fatalf("Get(%q) = %q, %v", m.Key, v, ok)
		}
	}
}

// checkIncremental feeds data to a Parser as if it arrived in pieces, in a buffer that grows
// in place and then once into a new one, and checks that the result is Parse's (o, err).
func checkIncremental(t *testing.T, data []byte, o *Object, err error) {
	t.Helper()
	step := max(1, len(data)/256)
	buf := make([]byte, 0, len(data)/2+1)
	var p Parser
	for n := 0; n < len(data); n = min(len(data), n+step) {
		if n > cap(buf) { // the body moves: the parser must start over, not misread
			buf = append(make([]byte, 0, len(data)), buf...)
		}
		buf = append(buf, data[len(buf):n]...)
		if ferr := p.scan(buf); ferr != nil && (err == nil || ferr.Error() != err.Error()) {
			t.Fatalf("feeding %q: error %v at %d bytes, Parse says %v", truncateForLog(data), ferr, n, err)
		}
	}
	buf = append(buf, data[len(buf):]...)
	got, gerr := p.Finish(buf)
	if (gerr == nil) != (err == nil) || gerr != nil && gerr.Error() != err.Error() {
		t.Fatalf("Parser on %q: error %v, Parse says %v", truncateForLog(data), gerr, err)
	}
	if err != nil {
		return
	}
	if len(got.Members) != len(o.Members) || got.Size != o.Size || (got.raw == nil) != (o.raw == nil) {
		t.Fatalf("Parser on %q: %d members, size %d, compact %v; Parse: %d, %d, %v", truncateForLog(data),
			len(got.Members), got.Size, got.raw != nil, len(o.Members), o.Size, o.raw != nil)
	}
	for i, m := range got.Members {
		w := o.Members[i]
		if m.Key != w.Key || offset(buf, m.RawKey) != offset(data, w.RawKey) || !bytes.Equal(m.RawKey, w.RawKey) ||
			offset(buf, m.Value) != offset(data, w.Value) || !bytes.Equal(m.Value, w.Value) {
			t.Fatalf("Parser on %q: member %d differs", truncateForLog(data), i)
		}
	}
}

// decodeAny decodes data with numbers kept as text, so huge numbers compare exactly.
func decodeAny(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", truncateForLog(data), err)
	}
	return v
}

func truncateForLog(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

// FuzzParse checks Parse against encoding/json on arbitrary input.
func FuzzParse(f *testing.F) {
	f.Add(testkit.SyntheticResponsesBody(16))
	for _, s := range []string{
		``, `{}`, ` {"a":1} `, `[]`, `"x"`, `1`, `null`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`,
		`{"a":"\ud800"}`, `{"a":"\ud83d\ude00"}`, `{"\udc00":1,"\ud800":2}`, `{"a":"\x"}`, `{"a":"\u12G4"}`,
		"{\"a\":\"\xff\"}", "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"x\ny\"}", "{\"a\":\"\x7f\"}",
		`{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, `{"a":-0.0e-0}`, `{"a":1e999}`, `{"a":[1,]}`, `{"a":1}x`,
		`{"a":tru}`, `{"a":[{"b":{"c":[true,false,null]}}]}`, "{\"a\":\"abcdefg\\\"hijklmnop\"}",
		nested(MaxDepth, "[", "]"), nested(MaxDepth+1, "[", "]"), nestedObjects(MaxDepth), nestedObjects(MaxDepth + 1),
		`{"a":"` + strings.Repeat("é", 13) + `\n` + strings.Repeat("z", 13) + `"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkOracle(t, data)
	})
}

// FuzzAppendString checks AppendString against encoding/json without HTML escaping, and
// quotedLen against AppendString.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\s/", "\b\f\n\r\t\x00\x1f\x7f", "<>&", "é😀", "\u2028\u2029", "\xff\xc3", "\ufffd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString([]byte("prefix"), s)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if string(got) != "prefix"+strings.TrimSuffix(want.String(), "\n") {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got[6:], want.Bytes())
		}
		if n := quotedLen(s); n != len(got)-6 {
			t.Fatalf("quotedLen(%q) = %d, want %d", s, n, len(got)-6)
		}
		if back, err := DecodeString(got[6:]); err != nil || (utf8.ValidString(s) && back != s) {
			t.Fatalf("DecodeString(AppendString(%q)) = %q, %v", s, back, err)
		}
	})
}
