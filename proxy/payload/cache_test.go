package payload

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
)

// accountOverrides is what routing adds for one account.
var accountOverrides = []Override{{"store", []byte("false")}, {"stream", []byte("true")}}

// bigObject parses a synthetic Responses body well above DirectBelow.
func bigObject(t testing.TB) *Object {
	t.Helper()
	body := testkit.SyntheticResponsesBody(2000)
	if len(body) < 2*DirectBelow {
		t.Fatalf("synthetic body too small: %d", len(body))
	}
	o, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// withMember returns a copy of o where key has value v: the input member keeps its identity.
func withMember(o *Object, key string, v string) *Object {
	c := &Object{Size: o.Size, Members: slices.Clone(o.Members)}
	for i := range c.Members {
		if c.Members[i].Key == key {
			c.Members[i].Value = []byte(v)
			return c
		}
	}
	c.Members = append(c.Members, Member{Key: key, RawKey: AppendString(nil, key), Value: []byte(v)})
	return c
}

func same(a, b []byte) bool {
	return unsafe.SliceData(a) == unsafe.SliceData(b) && len(a) == len(b)
}

// checkBody checks that a body returned by the cache is byte for byte a direct Build.
func checkBody(t *testing.T, got []byte, o *Object, ov []Override) {
	t.Helper()
	if want := Build(nil, o, ov); !bytes.Equal(got, want) {
		t.Fatalf("cached body differs from a direct Build (%d vs %d bytes)", len(got), len(want))
	}
}

func TestCacheHit(t *testing.T) {
	body := testkit.SyntheticResponsesBody(2000)
	o, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache()
	first := c.Body(o, "input", accountOverrides)
	checkBody(t, first, o, accountOverrides)
	// The next account: same request, equal (not identical) overrides.
	second := c.Body(o, "input", slices.Clone(accountOverrides))
	if !same(first, second) {
		t.Fatal("hit did not return the very same []byte")
	}
	// A second Parse of the same buffer has values with the same identity: also a hit.
	o2, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	if third := c.Body(o2, "input", accountOverrides); !same(first, third) {
		t.Fatal("re-parse of the same buffer missed")
	}
	if s := c.Stats(); s != (Stats{Hits: 2, Misses: 1}) || c.keyBuilds != 3 {
		t.Fatalf("stats = %+v, %d keys", s, c.keyBuilds)
	}
}

func TestCacheMissOnAnyOtherField(t *testing.T) {
	o := bigObject(t)
	for _, tc := range []struct {
		name string
		o    *Object
		ov   []Override
	}{
		{"model", withMember(o, "model", `"gpt-5.1-codex"`), accountOverrides},
		{"instructions", withMember(o, "instructions", `"other instructions"`), accountOverrides},
		{"tools", withMember(o, "tools", `[]`), accountOverrides},
		{"reasoning", withMember(o, "reasoning", `{"effort":"high","summary":"auto"}`), accountOverrides},
		{"extra member", withMember(o, "service_tier", `"priority"`), accountOverrides},
		{"same value, different raw key", func() *Object {
			c := withMember(o, "model", `"gpt-5-codex"`)
			c.Members[0].RawKey = []byte(`"\u006dodel"`)
			return c
		}(), accountOverrides},
		{"input moved", func() *Object {
			c := withMember(o, "model", `"gpt-5-codex"`)
			last := len(c.Members) - 1
			c.Members[0], c.Members[last] = c.Members[last], c.Members[0]
			return c
		}(), accountOverrides},
		{"override value", o, []Override{{"store", []byte("true")}, {"stream", []byte("true")}}},
		{"override added by routing", o, append(slices.Clone(accountOverrides), Override{"model", []byte(`"gpt-5"`)})},
		{"override appending a member", o, append(slices.Clone(accountOverrides), Override{"metadata", []byte(`{}`)})},
		{"override removing a member", o, append(slices.Clone(accountOverrides), Override{"tools", nil})},
		{"second override value", o, []Override{{"store", []byte("false")}, {"stream", []byte("false")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache()
			first := c.Body(o, "input", accountOverrides)
			got := c.Body(tc.o, "input", tc.ov)
			if s := c.Stats(); s != (Stats{Misses: 2}) {
				t.Fatalf("stats = %+v, want 2 misses", s)
			}
			if same(first, got) {
				t.Fatal("a miss returned the cached body")
			}
			checkBody(t, got, tc.o, tc.ov)
			// Both variants stay cached.
			if !same(c.Body(o, "input", accountOverrides), first) || !same(c.Body(tc.o, "input", tc.ov), got) {
				t.Fatal("variants were not both kept")
			}
		})
	}
}

func TestCacheKeyIsTheSerialization(t *testing.T) {
	// The synthetic body already has "store":false and "stream":true: overrides that do not
	// change the serialization (or none at all) give the same variant, hence a hit.
	o := bigObject(t)
	c := NewCache()
	a := c.Body(o, "input", accountOverrides)
	b := c.Body(o, "input", nil)
	if !same(a, b) || c.Stats() != (Stats{Hits: 1, Misses: 1}) {
		t.Fatalf("stats = %+v", c.Stats())
	}
	checkBody(t, b, o, nil)
}

func TestCacheMissOnOtherInputIdentity(t *testing.T) {
	body := testkit.SyntheticResponsesBody(2000)
	o1, err1 := Parse(bytes.Clone(body))
	o2, err2 := Parse(bytes.Clone(body))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	c := NewCache()
	b1 := c.Body(o1, "input", accountOverrides)
	b2 := c.Body(o2, "input", accountOverrides)
	if s := c.Stats(); s != (Stats{Misses: 2}) {
		t.Fatalf("stats = %+v, want 2 misses", s)
	}
	if same(b1, b2) || !bytes.Equal(b1, b2) {
		t.Fatal("equal content must give equal but distinct bodies")
	}
	// The same address with another length is another identity too (the cache never reads the
	// input's content, so a truncated value is fine here).
	o3 := withMember(o1, "model", `"gpt-5-codex"`)
	for i := range o3.Members {
		if o3.Members[i].Key == "input" {
			o3.Members[i].Value = o3.Members[i].Value[:len(o3.Members[i].Value)-1]
		}
	}
	checkBody(t, c.Body(o3, "input", accountOverrides), o3, accountOverrides)
	if s := c.Stats(); s != (Stats{Misses: 3}) {
		t.Fatalf("stats = %+v, want 3 misses", s)
	}
}

func TestCacheDirect(t *testing.T) {
	big := bigObject(t)
	pad := strings.Repeat("x", DirectBelow)
	for _, tc := range []struct {
		name, key string
		o         *Object
		ov        []Override
	}{
		{"small body", "input", mustParse(t, `{"model":"m","input":[{"type":"message","role":"user","content":"hi"}]}`), accountOverrides},
		{"just below the threshold", "input", mustParse(t, `{"input":[],"pad":"`+pad[:DirectBelow-22]+`"}`), nil},
		{"chat completions", "", mustParse(t, `{"model":"m","messages":[{"role":"user","content":"`+pad+`"}]}`), accountOverrides},
		{"no key even with input", "", big, accountOverrides},
		{"absent input", "input", mustParse(t, `{"model":"m","prompt":"`+pad+`"}`), accountOverrides},
		{"string input", "input", mustParse(t, `{"model":"m","input":"`+pad+`"}`), accountOverrides},
		{"input removed by override", "input", big, []Override{{"input", nil}}},
		{"input replaced by a string", "input", big, []Override{{"input", []byte(`"hi"`)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []*Cache{NewCache(), NewUncached()} {
				a := c.Body(tc.o, tc.key, tc.ov)
				b := c.Body(tc.o, tc.key, tc.ov)
				checkBody(t, a, tc.o, tc.ov)
				checkBody(t, b, tc.o, tc.ov)
				if same(a, b) {
					t.Fatal("direct path returned a shared body")
				}
				if s := c.Stats(); s != (Stats{Direct: 2}) {
					t.Fatalf("stats = %+v, want 2 direct", s)
				}
				if c.keyBuilds != 0 || c.scratch != nil || c.entries != nil {
					t.Fatalf("direct path built a key or stored a body (%d keys)", c.keyBuilds)
				}
			}
		})
	}
	// Exactly at the threshold the cache is used.
	o := mustParse(t, `{"input":[],"pad":"`+pad[:DirectBelow-21]+`"}`)
	if o.Size != DirectBelow {
		t.Fatalf("size %d", o.Size)
	}
	c := NewCache()
	c.Body(o, "input", nil)
	if s := c.Stats(); s != (Stats{Misses: 1}) || c.keyBuilds != 1 {
		t.Fatalf("stats = %+v at the threshold", s)
	}
}

func TestCacheInputFromOverride(t *testing.T) {
	// The input identity is that of the value after overrides.
	o := bigObject(t)
	in := []byte(`[{"type":"message","role":"user","content":"hi"}]`)
	ov := []Override{{"input", in}}
	c := NewCache()
	a := c.Body(o, "input", ov)
	b := c.Body(o, "input", []Override{{"input", in}})
	checkBody(t, a, o, ov)
	if !same(a, b) {
		t.Fatal("same override input missed")
	}
	c.Body(o, "input", []Override{{"input", bytes.Clone(in)}})
	if s := c.Stats(); s != (Stats{Hits: 1, Misses: 2}) {
		t.Fatalf("stats = %+v", s)
	}
}

func TestUncached(t *testing.T) {
	o := bigObject(t)
	c := NewUncached()
	var prev []byte
	for range 3 {
		got := c.Body(o, "input", accountOverrides)
		checkBody(t, got, o, accountOverrides)
		if prev != nil && same(prev, got) {
			t.Fatal("uncached returned a shared body")
		}
		prev = got
	}
	if s := c.Stats(); s != (Stats{Misses: 3}) || c.keyBuilds != 0 {
		t.Fatalf("stats = %+v, %d keys", s, c.keyBuilds)
	}
}

func TestCacheBounded(t *testing.T) {
	o := bigObject(t)
	c := NewCache()
	variant := func(i int) []Override { return []Override{{"store", []byte("false")}, {"n", []byte{byte('0' + i)}}} }
	bodies := make([][]byte, maxEntries+1)
	for i := range bodies {
		bodies[i] = c.Body(o, "input", variant(i))
	}
	if len(c.entries) != maxEntries {
		t.Fatalf("%d entries kept, want %d", len(c.entries), maxEntries)
	}
	for i := 1; i <= maxEntries; i++ { // the newest entries still hit
		if !same(c.Body(o, "input", variant(i)), bodies[i]) {
			t.Fatalf("variant %d evicted too early", i)
		}
	}
	c.Body(o, "input", variant(0)) // the oldest was evicted
	if s := c.Stats(); s != (Stats{Hits: maxEntries, Misses: maxEntries + 2}) {
		t.Fatalf("stats = %+v", s)
	}
}

func TestCacheRotationBodiesEqual(t *testing.T) {
	// Bodies sent to two accounts of a rotation are byte for byte those of a direct build, whether
	// the second comes from the cache or not.
	o := bigObject(t)
	cached, direct := NewCache(), NewUncached()
	for range 2 {
		if !bytes.Equal(cached.Body(o, "input", accountOverrides), direct.Body(o, "input", accountOverrides)) {
			t.Fatal("cached and uncached bodies differ")
		}
	}
	if cached.Stats().Hits != 1 {
		t.Fatalf("stats = %+v", cached.Stats())
	}
}
