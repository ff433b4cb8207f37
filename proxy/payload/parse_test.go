package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
)

// nested returns a body whose total nesting depth (top-level object included) is depth.
func nested(depth int, open, close string) string {
	return `{"a":` + strings.Repeat(open, depth-1) + strings.Repeat(close, depth-1) + "}"
}

// nestedObjects returns a body of depth nested objects.
func nestedObjects(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat("}", depth-1)
}

func TestParseValid(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		keys       []string // decoded keys, in order
	}{
		{"empty object", `{}`, nil},
		{"empty object with spaces", " \t\r\n{ \n}\r\n ", nil},
		{"spaces everywhere", "\t{ \"a\" :\n1 , \"b\"\r:[ 1 , { } , [ ] ] }\n", []string{"a", "b"}},
		{"literals", `{"t":true,"f":false,"n":null}`, []string{"t", "f", "n"}},
		{"numbers", `{"a":[0,-0,1.5,-1.5e10,1E+2,1e-2,0.0e0,123456789012345678901234567890,1e999]}`, []string{"a"}},
		{"escapes", `{"a":"\"\\\/\b\f\n\r\t\u00e9\u00E9"}`, []string{"a"}},
		{"surrogate pair", `{"a":"\ud83d\ude00"}`, []string{"a"}},
		{"lone high surrogate", `{"a":"\ud800"}`, []string{"a"}},
		{"lone low surrogate", `{"a":"\udc00x"}`, []string{"a"}},
		{"reversed surrogates", `{"a":"\udc00\ud800"}`, []string{"a"}},
		{"utf8", `{"a":"é😀中文 ￿"}`, []string{"a"}},
		{"replacement char raw", "{\"a\":\"\xef\xbf\xbd\"}", []string{"a"}},
		{"DEL is allowed", "{\"a\":\"\x7f\"}", []string{"a"}},
		{"empty key", `{"":1}`, []string{""}},
		{"escaped keys are decoded", `{"\u0061\n":1,"\ud83d\ude00":2,"\ud800":3,"a\/b":4}`, []string{"a\n", "😀", "\uFFFD", "a/b"}},
		{"long string crossing words", `{"k":"` + strings.Repeat("abcdefghij", 10) + `\n` + strings.Repeat("é", 9) + `"}`, []string{"k"}},
		{"exactly MaxDepth arrays", nested(MaxDepth, "[", "]"), []string{"a"}},
		{"exactly MaxDepth objects", nestedObjects(MaxDepth), []string{"a"}},
		{"nested duplicate keys are not top-level", `{"a":{"x":1,"x":2}}`, []string{"a"}},
		{"keys differing only after decoding", `{"a":1,"\u0062":2}`, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkOracle(t, []byte(tc.body))
			o, err := Parse([]byte(tc.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var keys []string
			for _, m := range o.Members {
				keys = append(keys, m.Key)
			}
			if !equalStrings(keys, tc.keys) {
				t.Fatalf("keys = %q, want %q", keys, tc.keys)
			}
			if o.Size != len(tc.body) {
				t.Fatalf("Size = %d, want %d", o.Size, len(tc.body))
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		offset     int    // expected Error.Offset, -1 to skip
		msg        string // substring of the message
	}{
		{"empty", ``, 0, "unexpected end of input"},
		{"only spaces", "  \n", 3, "unexpected end of input"},
		{"truncated open", `{`, 1, "unexpected end of input"},
		{"truncated after key", `{"a"`, 4, "unexpected end of input"},
		{"truncated after colon", `{"a":`, 5, "unexpected end of input"},
		{"truncated value", `{"a":1`, 6, "unexpected end of input"},
		{"truncated string", `{"a":"abc`, 9, "unexpected end of input"},
		{"truncated nested", `{"a":[{"b":[1,2`, 15, "unexpected end of input"},
		{"truncated escape", `{"a":"\`, 7, "unexpected end of input"},
		{"truncated unicode escape", `{"a":"\u12`, 10, "unexpected end of input"},
		{"truncated literal", `{"a":tr`, 7, "unexpected end of input"},
		{"truncated utf8 at end", "{\"a\":\"\xc3", 7, "unexpected end of input"},
		{"trailing garbage", `{"a":1}x`, 7, "invalid character 'x' after top-level value"},
		{"second value", `{"a":1} {}`, 8, "after top-level value"},
		{"bad escape", `{"a":"\x"}`, 7, "invalid character 'x' in string escape"},
		{"single quote escape", `{"a":"\'"}`, 7, `invalid character '\'' in string escape`},
		{"bad unicode escape", `{"a":"\u12G4"}`, 10, `invalid character 'G' in \u hexadecimal character escape`},
		{"short unicode escape", `{"a":"\u12"}`, 10, `invalid character '"' in \u hexadecimal character escape`},
		{"invalid utf8 byte", "{\"a\":\"\xff\"}", 6, "invalid UTF-8 byte 0xff in string"},
		{"truncated utf8 sequence", "{\"a\":\"\xc3x\"}", 6, "invalid UTF-8"},
		{"encoded surrogate", "{\"a\":\"\xed\xa0\x80\"}", 6, "invalid UTF-8"},
		{"overlong encoding", "{\"a\":\"\xc0\x80\"}", 6, "invalid UTF-8"},
		{"invalid utf8 in key", "{\"\xfe\":1}", 2, "invalid UTF-8"},
		{"invalid utf8 after long ascii", "{\"a\":\"" + strings.Repeat("x", 37) + "\x80\"}", 43, "invalid UTF-8 byte 0x80"},
		{"invalid utf8 outside string", "{\"a\":1\xff}", 6, `invalid character '\xff' after object key:value pair`},
		{"newline in string", "{\"a\":\"x\ny\"}", 7, `invalid character '\n' in string literal`},
		{"NUL in string", "{\"a\":\"\x00\"}", 6, `invalid character '\x00' in string literal`},
		{"0x1f in string", "{\"a\":\"abcdefghijklmn\x1f\"}", 20, "in string literal"},
		{"leading zero", `{"a":01}`, 6, "invalid character '1' after object key:value pair"},
		{"negative leading zero", `{"a":-01}`, 7, "after object key:value pair"},
		{"lone minus", `{"a":-}`, 6, "invalid character '}' in numeric literal"},
		{"minus letter", `{"a":-x}`, 6, "in numeric literal"},
		{"dot without digits", `{"a":1.}`, 7, "after decimal point in numeric literal"},
		{"leading dot", `{"a":.5}`, 5, "looking for beginning of value"},
		{"plus sign", `{"a":+1}`, 5, "looking for beginning of value"},
		{"exponent without digits", `{"a":1e}`, 7, "in exponent of numeric literal"},
		{"exponent sign without digits", `{"a":1e+}`, 8, "in exponent of numeric literal"},
		{"NaN", `{"a":NaN}`, 5, "looking for beginning of value"},
		{"bad literal", `{"a":tru}`, 8, "in literal true (expecting 'e')"},
		{"capitalised literal", `{"a":True}`, 5, "looking for beginning of value"},
		{"null typo", `{"a":nul1}`, 8, "in literal null"},
		{"trailing comma in array", `{"a":[1,]}`, 8, "looking for beginning of value"},
		{"trailing comma in object", `{"a":1,}`, 7, "looking for beginning of object key string"},
		{"trailing comma in nested object", `{"a":{"b":1,}}`, 12, "looking for beginning of object key string"},
		{"missing colon", `{"a" 1}`, 5, "after object key"},
		{"missing colon nested", `{"a":{"b" 1}}`, 10, "after object key"},
		{"unquoted key", `{a:1}`, 1, "looking for beginning of object key string"},
		{"single quotes", `{"a":'x'}`, 5, "looking for beginning of value"},
		{"key without value", `{"a":{"b"}}`, 9, "after object key"},
		{"missing comma", `{"a":[1 2]}`, 8, "after array element"},
		{"mismatched bracket", `{"a":[1}`, 7, "after array element"},
		{"mismatched brace", `{"a":{"b":1]}`, 11, "after object key:value pair"},
		{"BOM", "\ufeff{}", 0, `invalid character '\xef' looking for beginning of value`},
		{"form feed is not whitespace", "{\f}", 1, "looking for beginning of object key string"},
		{"array top level", `[]`, 0, "top-level value must be an object, not an array"},
		{"string top level", `"s"`, 0, "not a string"},
		{"number top level", ` 12`, 1, "not a number"},
		{"null top level", `null`, 0, "not null"},
		{"boolean top level", `true`, 0, "not a boolean"},
		{"duplicate key", `{"a":1,"b":2,"a":3}`, 13, `duplicate key "a"`},
		{"duplicate key after decoding", `{"a":1,"\u0061":2}`, 7, `duplicate key "a"`},
		{"duplicate replacement keys", `{"\ud800":1,"\udc00":2}`, 12, "duplicate key \"\uFFFD\""},
		{"depth MaxDepth+1 arrays", nested(MaxDepth+1, "[", "]"), 5 + MaxDepth - 1, "exceeded maximum nesting depth 512"},
		{"depth MaxDepth+1 objects", nestedObjects(MaxDepth + 1), 5 * MaxDepth, "exceeded maximum nesting depth"},
		{"very deep", `{"a":` + strings.Repeat("[", 200000), 5 + MaxDepth - 1, "exceeded maximum nesting depth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkOracle(t, []byte(tc.body))
			o, err := Parse([]byte(tc.body))
			if err == nil {
				t.Fatalf("Parse accepted %q: %+v", tc.body, o)
			}
			if o != nil {
				t.Fatalf("Parse returned an object with an error")
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not *Error", err)
			}
			if tc.offset >= 0 && pe.Offset != tc.offset {
				t.Errorf("offset = %d, want %d (%v)", pe.Offset, tc.offset, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not contain %q", err, tc.msg)
			}
			if !strings.HasPrefix(err.Error(), "invalid JSON at byte ") {
				t.Errorf("error %q lacks the standard prefix", err)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	_, err := Parse([]byte(`{"a":"\x"}`))
	if got, want := err.Error(), `invalid JSON at byte 7: invalid character 'x' in string escape`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// A duplicate huge key must not be echoed back.
	long := strings.Repeat("é", 5000)
	_, err = Parse([]byte(`{"` + long + `":1,"` + long + `":2}`))
	if err == nil || len(err.Error()) > 100 {
		t.Fatalf("error too long or missing: %d bytes", len(err.Error()))
	}
	if !utf8.ValidString(err.Error()) {
		t.Fatalf("error message cut a rune: %q", err)
	}
}

func TestParseMembers(t *testing.T) {
	body := []byte(" {\"model\" : \"gpt\" ,\n\"inp\\u0075t\":[ 1 , {\"x\":[]} ] ,\"n\":-1.5e3}  ")
	o, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ key, raw, value string }{
		{"model", `"model"`, `"gpt"`},
		{"input", `"inp\u0075t"`, `[ 1 , {"x":[]} ]`},
		{"n", `"n"`, `-1.5e3`},
	}
	if len(o.Members) != len(want) {
		t.Fatalf("%d members, want %d", len(o.Members), len(want))
	}
	start, end := uintptr(unsafe.Pointer(&body[0])), uintptr(unsafe.Pointer(&body[0]))+uintptr(len(body))
	for i, w := range want {
		m := o.Members[i]
		if m.Key != w.key || string(m.RawKey) != w.raw || string(m.Value) != w.value {
			t.Errorf("member %d = %q %q %q, want %q %q %q", i, m.Key, m.RawKey, m.Value, w.key, w.raw, w.value)
		}
		for _, s := range [][]byte{m.RawKey, m.Value} {
			if p := uintptr(unsafe.Pointer(unsafe.SliceData(s))); p < start || p+uintptr(len(s)) > end {
				t.Errorf("member %d is not a subslice of the body", i)
			}
			if cap(s) != len(s) {
				t.Errorf("member %d: cap %d > len %d lets appends overwrite the body", i, cap(s), len(s))
			}
		}
	}
	if v, ok := o.Get("input"); !ok || string(v) != `[ 1 , {"x":[]} ]` {
		t.Errorf("Get(input) = %q, %v", v, ok)
	}
	if _, ok := o.Get("inp\\u0075t"); ok {
		t.Errorf("Get matched a raw key")
	}
	if KindOf(o.Members[2].Value) != KindNumber {
		t.Errorf("KindOf(n) = %v", KindOf(o.Members[2].Value))
	}
}

func TestParseManyKeys(t *testing.T) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range 5000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strconv.Itoa(i) + `":1`)
	}
	b.WriteByte('}')
	o, err := Parse(b.Bytes())
	if err != nil || len(o.Members) != 5000 {
		t.Fatalf("Parse: %v", err)
	}
	// The same body with the first key repeated at the end is rejected (map path).
	dup := append(bytes.TrimSuffix(bytes.Clone(b.Bytes()), []byte("}")), `,"k`+"a0"+`":2}`...)
	if _, err := Parse(dup); err == nil || !strings.Contains(err.Error(), `duplicate key "ka0"`) {
		t.Fatalf("duplicate in a large object: %v", err)
	}
}

func TestParseAllocations(t *testing.T) {
	// Allocations depend on the number of top-level members, never on the size or depth of values.
	body := testkit.SyntheticResponsesBody(2000)
	o, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(10, func() { Parse(body) })
	if max := float64(2 + len(o.Members)); allocs > max {
		t.Fatalf("Parse made %v allocations for %d members, want <= %v", allocs, len(o.Members), max)
	}
	deep := []byte(`{"a":` + strings.Repeat(`[{"x":"é","y":`, (MaxDepth-2)/2) + `[1.5e3,true,null]` + strings.Repeat(`}]`, (MaxDepth-2)/2) + `}`)
	if _, err := Parse(deep); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(10, func() { Parse(deep) }); allocs > 3 {
		t.Fatalf("Parse of a deep value made %v allocations", allocs)
	}
}

func TestDecodeString(t *testing.T) {
	for _, raw := range []string{
		`""`, `"plain ascii"`, `"é😀"`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9\u20AC"`, `"\ud83d\ude00"`,
		`"\ud800"`, `"\ud800x"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud800\ud800\udc00"`, `"a\u0000b"`,
		`"` + strings.Repeat(`x\n`, 100) + `"`,
	} {
		got, err := DecodeString([]byte(raw))
		if err != nil {
			t.Errorf("DecodeString(%s): %v", raw, err)
			continue
		}
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("DecodeString(%s) = %q, want %q", raw, got, want)
		}
	}
	for _, raw := range []string{``, `"`, `x`, `"abc`, `"a"b`, `"a" `, `"\x"`, "\"\xff\"", "\"\n\"", `123`} {
		if s, err := DecodeString([]byte(raw)); err == nil {
			t.Errorf("DecodeString(%q) = %q, want an error", raw, s)
		}
	}
}

func TestKind(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		kind Kind
		name string
	}{
		{`"x"`, KindString, "string"}, {`-1`, KindNumber, "number"}, {`0`, KindNumber, "number"},
		{`{}`, KindObject, "object"}, {`[]`, KindArray, "array"}, {`true`, KindTrue, "boolean"},
		{`false`, KindFalse, "boolean"}, {`null`, KindNull, "null"}, {``, KindInvalid, "invalid"}, {`x`, KindInvalid, "invalid"},
	} {
		if k := KindOf([]byte(tc.raw)); k != tc.kind || k.String() != tc.name {
			t.Errorf("KindOf(%q) = %v (%d), want %v", tc.raw, k, k, tc.name)
		}
	}
}

func TestParserKeepsItsWorkAcrossMovesAndRollbacks(t *testing.T) {
	// A body with more top-level members than the linear duplicate check handles, fed in
	// pieces that each end just after a member's value (the member is complete, but the scan
	// must go back to the last comma), each time in a new buffer, as append moves a growing one.
	var body []byte
	var cuts []int
	body = append(body, '{')
	for i := range 40 {
		if i > 0 {
			cuts = append(cuts, len(body))
			body = append(body, ',')
		}
		body = append(body, fmt.Sprintf(`"k%d":[%q,12345]`, i, strings.Repeat("x", 900))...)
	}
	body = append(body, '}')
	var p Parser
	for _, n := range cuts {
		buf := bytes.Clone(body[:n])
		before := p.pos
		p.follow(buf)
		if p.pos != before {
			t.Fatalf("moving the buffer sent the scan back from %d to %d", before, p.pos)
		}
		for _, m := range p.members {
			if off := offset(buf, m.Value); off < 0 || off >= len(buf) {
				t.Fatalf("member %q was not moved to the new buffer", m.Key)
			}
		}
		if err := p.scan(buf); err != nil {
			t.Fatal(err)
		}
		if len(p.members) >= dupMapAbove && p.seen == nil {
			t.Fatalf("at %d members the duplicate map was dropped: each scan would rebuild it", len(p.members))
		}
		if p.seen != nil { // the map holds exactly the complete members' keys
			if len(p.seen) != len(p.members) {
				t.Fatalf("%d keys in the map for %d members", len(p.seen), len(p.members))
			}
			for _, m := range p.members {
				if _, ok := p.seen[m.Key]; !ok {
					t.Fatalf("member %q missing from the map", m.Key)
				}
			}
		}
	}
	o, err := p.Finish(bytes.Clone(body))
	if err != nil || len(o.Members) != 40 || o.raw == nil {
		t.Fatalf("%v", err)
	}
	if want, _ := Parse(body); !reflect.DeepEqual(o.Members[39].Key, want.Members[39].Key) || !bytes.Equal(o.Members[39].Value, want.Members[39].Value) {
		t.Fatal("the last member differs from Parse's")
	}
}
