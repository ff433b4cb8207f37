package payload

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
)

func mustParse(t testing.TB, body string) *Object {
	t.Helper()
	o, err := Parse([]byte(body))
	if err != nil {
		t.Fatalf("Parse(%q): %v", body, err)
	}
	return o
}

func TestBuild(t *testing.T) {
	const body = " { \"model\" : \"a\",\n \"inp\\u0075t\":[ 1 ,2 ], \"store\" : true, \"x\":{ \"y\" : 1 } } "
	f := []byte("false")
	for _, tc := range []struct {
		name string
		ov   []Override
		want string
	}{
		{"no overrides", nil, `{"model":"a","inp\u0075t":[ 1 ,2 ],"store":true,"x":{ "y" : 1 }}`},
		{"replace in place", []Override{{"store", f}}, `{"model":"a","inp\u0075t":[ 1 ,2 ],"store":false,"x":{ "y" : 1 }}`},
		{"replace by decoded key keeps raw key", []Override{{"input", []byte(`[]`)}}, `{"model":"a","inp\u0075t":[],"store":true,"x":{ "y" : 1 }}`},
		{"delete", []Override{{"x", nil}, {"model", nil}}, `{"inp\u0075t":[ 1 ,2 ],"store":true}`},
		{"delete absent is a no-op", []Override{{"nope", nil}}, `{"model":"a","inp\u0075t":[ 1 ,2 ],"store":true,"x":{ "y" : 1 }}`},
		{"append in order", []Override{{"stream", []byte("true")}, {"a\"b\n", []byte("1")}, {"store", f}},
			`{"model":"a","inp\u0075t":[ 1 ,2 ],"store":false,"x":{ "y" : 1 },"stream":true,"a\"b\n":1}`},
		{"last override wins", []Override{{"store", []byte("1")}, {"new", []byte("1")}, {"store", f}, {"new", []byte("2")}},
			`{"model":"a","inp\u0075t":[ 1 ,2 ],"store":false,"x":{ "y" : 1 },"new":2}`},
		{"delete everything", []Override{{"model", nil}, {"input", nil}, {"store", nil}, {"x", nil}}, `{}`},
		{"delete everything then append", []Override{{"model", nil}, {"input", nil}, {"store", nil}, {"x", nil}, {"k", []byte(`"v"`)}}, `{"k":"v"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := mustParse(t, body)
			got := Build(nil, o, tc.ov)
			if string(got) != tc.want {
				t.Fatalf("Build =\n%s\nwant\n%s", got, tc.want)
			}
			checkOracle(t, got)
			// Appending to a prefix keeps it.
			if got := Build([]byte("prefix"), o, tc.ov); string(got) != "prefix"+tc.want {
				t.Fatalf("Build with prefix = %s", got)
			}
		})
	}
}

func TestBuildEmpty(t *testing.T) {
	o := mustParse(t, ` {  } `)
	if got := Build(nil, o, nil); string(got) != `{}` {
		t.Fatalf("got %s", got)
	}
	if got := Build(nil, o, []Override{{"a", []byte("1")}, {"b", []byte("2")}}); string(got) != `{"a":1,"b":2}` {
		t.Fatalf("got %s", got)
	}
}

func TestBuildOneAllocation(t *testing.T) {
	body := testkit.SyntheticResponsesBody(1000)
	o := mustParse(t, string(body))
	ov := []Override{{"store", []byte("false")}, {"model", []byte(`"gpt-5"`)}, {"added\u2028key", []byte("null")}}
	out := Build(nil, o, ov)
	if allocs := testing.AllocsPerRun(10, func() { Build(nil, o, ov) }); allocs != 1 {
		t.Fatalf("Build made %v allocations, want 1", allocs)
	}
	dst := make([]byte, 0, len(out))
	if allocs := testing.AllocsPerRun(10, func() { Build(dst, o, ov) }); allocs != 0 {
		t.Fatalf("Build into a large enough dst made %v allocations, want 0", allocs)
	}
	if !bytes.Equal(Build(dst, o, ov), out) {
		t.Fatal("Build into dst differs")
	}
}

func TestAppendStringExamples(t *testing.T) {
	for s, want := range map[string]string{
		"":               `""`,
		"a<b>&c":         `"a<b>&c"`,
		"q\"b\\/":        `"q\"b\\/"`,
		"\b\f\n\r\t\x01": `"\b\f\n\r\t\u0001"`,
		"\u2028\u2029":   `"\u2028\u2029"`,
		"bad\xffutf8":    `"bad\ufffdutf8"`,
		"é😀":             `"é😀"`,
	} {
		if got := string(AppendString(nil, s)); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
		if n := quotedLen(s); n != len(want) {
			t.Errorf("quotedLen(%q) = %d, want %d", s, n, len(want))
		}
	}
}

func TestUnchanged(t *testing.T) {
	compact := `{"model":"a","input":[ 1 ,2 ],"store":false,"stream":true}`
	for _, tc := range []struct {
		name, body string
		ov         []Override
		want       bool
	}{
		{"no overrides", compact, nil, true},
		{"same values", compact, []Override{{"store", []byte("false")}, {"stream", []byte("true")}}, true},
		{"removing an absent key", compact, []Override{{"nope", nil}}, true},
		{"a later override restores the value", compact, []Override{{"store", []byte("true")}, {"store", []byte("false")}}, true},
		{"another value", compact, []Override{{"store", []byte("true")}}, false},
		{"same value spelled otherwise", compact, []Override{{"model", []byte(`"\u0061"`)}}, false},
		{"removal", compact, []Override{{"store", nil}}, false},
		{"addition", compact, []Override{{"n", []byte("1")}}, false},
		{"space between members", `{"model":"a", "store":false}`, nil, false},
		{"space after the colon", `{"model": "a"}`, nil, false},
		{"leading space", ` {"model":"a"}`, nil, false},
		{"trailing newline", "{\"model\":\"a\"}\n", nil, false},
		{"empty object", `{}`, nil, true},
		{"empty object with space", `{ }`, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			o := mustParse(t, tc.body)
			got, ok := Unchanged(o, tc.ov)
			if ok != tc.want {
				t.Fatalf("Unchanged = %v, want %v", ok, tc.want)
			}
			if built := Build(nil, o, tc.ov); ok && !bytes.Equal(got, built) {
				t.Fatalf("Unchanged gave %s, Build gives %s", got, built)
			}
			o, _ = Parse(body)
			if got, _ := Unchanged(o, tc.ov); ok && unsafe.SliceData(got) != unsafe.SliceData(body) {
				t.Fatal("the body was copied")
			}
		})
	}
}
