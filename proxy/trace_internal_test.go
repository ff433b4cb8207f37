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

// Codex's own background calls to the ChatGPT backend (one a minute while it idles) keep to a
// ring of their own: however many come, the clients' requests stay, and recent serves both in
// the order they ended.
func TestBackendCallsDoNotPushRequestsOut(t *testing.T) {
	r := newTraceRing(10) // 10 requests, 2 backend calls
	r.add(Trace{ID: "turn_1", Route: "responses"})
	r.add(Trace{ID: "usage_1", Route: RouteChatGPT, Path: "wham/usage"})
	r.add(Trace{ID: "turn_2", Route: "responses"})
	for i := range 100 {
		r.add(Trace{ID: "usage_" + string(rune('a'+i%26)), Route: RouteChatGPT, Path: "wham/usage"})
	}
	r.add(Trace{ID: "turn_3", Route: "responses"})
	var ids []string
	for _, tr := range r.recent(0) {
		ids = append(ids, tr.ID)
	}
	if want := []string{"turn_3", "usage_v", "usage_u", "turn_2", "turn_1"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("kept %v, want %v", ids, want)
	}
	if got := r.recent(2); len(got) != 2 || got[1].ID != "usage_v" {
		t.Fatalf("recent(2): %v", got)
	}
}
