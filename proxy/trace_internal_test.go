package proxy

import (
	"reflect"
	"testing"
	"time"
	"unsafe"
)

// TestCompactKeepsEveryTraceAsItWas: the idle reclaim copies the kept traces into fresh memory;
// what /relay/traces serves must not change, and the copies must not share the old strings.
func TestCompactKeepsEveryTraceAsItWas(t *testing.T) {
	r := newTraceRing(3)
	for i, id := range []string{"req_1", "req_2", "req_3", "req_4"} {
		r.add(Trace{ID: id, Time: time.Unix(int64(i), 0), Model: "gpt-5", ResolvedModel: "gpt-5-codex", Error: "boom " + id,
			Attempts:     []Attempt{{Account: "a", Status: 502, Error: "HTTP 502"}, {Account: "b", Status: 200}},
			DroppedTools: []string{"web_search"}})
	}
	before := r.recent(0)
	old := unsafe.StringData(before[0].Error)
	r.compact()
	after := r.recent(0)
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("compact changed the traces:\n%+v\n%+v", before, after)
	}
	if unsafe.StringData(after[0].Error) == old {
		t.Fatal("compact kept the old strings")
	}
	if len(after) != 3 || after[0].ID != "req_4" {
		t.Fatalf("ring order: %v", after)
	}
}
