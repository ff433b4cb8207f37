package payload

import (
	"encoding/json"
	"testing"
)

func TestElements(t *testing.T) {
	for _, in := range []string{
		`[]`, ` [ ] `, `[1]`, `[ 1 , "a,]" , {"k":[1,2,{"x":"]"}]} , [[]] , null , true ,-2.5e3]`,
		`["\"]\\", "\u005d"]`, "[\n\t{\"a\":1}\n]",
	} {
		got, err := Elements([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d elements, want %d", in, len(got), len(want))
		}
		for i := range got {
			if string(got[i]) != string(want[i]) {
				t.Errorf("%s: element %d = %s, want %s", in, i, got[i], want[i])
			}
		}
	}
	for _, bad := range []string{``, `{}`, `[1,2`, `"[1]"`} {
		if _, err := Elements([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzElements checks the split against encoding/json on every array Parse accepts.
func FuzzElements(f *testing.F) {
	f.Add(`{"a":[1,"x",{"b":[]}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		o, err := Parse([]byte(body))
		if err != nil {
			return
		}
		raw, ok := o.Get("a")
		if !ok || KindOf(raw) != KindArray {
			return
		}
		got, err := Elements(raw)
		if err != nil {
			t.Fatal(err)
		}
		var want []json.RawMessage
		if err := json.Unmarshal(raw, &want); err != nil {
			return // Parse accepts a few things encoding/json does not (documented in Parse)
		}
		if len(got) != len(want) {
			t.Fatalf("%d elements, want %d", len(got), len(want))
		}
		for i := range got {
			if string(got[i]) != string(want[i]) {
				t.Fatalf("element %d = %s, want %s", i, got[i], want[i])
			}
		}
	})
}

// First walks to the end of the first element only, and agrees with Elements.
func TestFirst(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`[{"a":[1,2]}, 3]`, `{"a":[1,2]}`},
		{` [ "x,y" ]`, `"x,y"`},
		{`[1]`, `1`},
	} {
		got, ok := First([]byte(c.in))
		if !ok || string(got) != c.want {
			t.Errorf("First(%s) = %s, %v; want %s", c.in, got, ok, c.want)
		}
	}
	if _, ok := First([]byte(`[]`)); ok {
		t.Error("First([]) found an element")
	}
	// Only the first element is walked: what follows it may be cut off.
	if got, ok := First([]byte(`[{"type":"additional_tools"},{"cut`)); !ok || string(got) != `{"type":"additional_tools"}` {
		t.Errorf("First of a cut array = %s, %v", got, ok)
	}
}
