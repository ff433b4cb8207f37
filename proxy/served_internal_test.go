package proxy

import (
	"strings"
	"testing"
)

// The responses the relay served are indexed by id in the conversations' budget: continuing
// the last one extends its conversation, an earlier one forks a conversation of its own, and a
// forgotten conversation leaves the index and the list whole, while a request that was
// replaying its items still reads them intact.
func TestServedConversationsIndexAndForget(t *testing.T) {
	b := &convBudget{limit: 1000, perConn: 600}
	item := func(s string, n int) []byte { return []byte(s + strings.Repeat("x", n)) }
	b.keepServed("", nil, [][]byte{item("u1", 50)}, [][]byte{item("o1", 50)}, "r1")
	base, ok := b.servedUpTo("r1")
	if !ok || len(base) != 2 {
		t.Fatalf("r1: %v, %d items", ok, len(base))
	}
	b.keepServed("r1", base, [][]byte{item("u2", 50)}, [][]byte{item("o2", 50)}, "r2")
	if b.served["r1"] != b.served["r2"] || b.lru.Len() != 1 {
		t.Fatal("continuing the last response did not extend its conversation")
	}
	// A fork from r1: a conversation of its own; r2 stays.
	b.keepServed("r1", base, [][]byte{item("u3", 50)}, nil, "r3")
	if b.served["r3"] == b.served["r1"] || b.lru.Len() != 2 {
		t.Fatal("a fork did not start a conversation of its own")
	}
	if h, ok := b.servedUpTo("r2"); !ok || len(h) != 4 || !strings.HasPrefix(string(h[2]), "u2") {
		t.Fatalf("r2 after the fork: %v %d", ok, len(h))
	}
	if h, ok := b.servedUpTo("r3"); !ok || len(h) != 3 || !strings.HasPrefix(string(h[2]), "u3") {
		t.Fatalf("r3: %v %d", ok, len(h))
	}
	// A request replays r2 while the budget forgets its conversation.
	replaying, _ := b.servedUpTo("r2")
	b.keepServed("", nil, [][]byte{item("big", 700)}, nil, "r4") // over perConn: forgotten at once
	if _, ok := b.servedUpTo("r4"); ok {
		t.Fatal("a conversation over its own bound was kept")
	}
	b.mu.Lock()
	b.forget(b.served["r2"])
	b.mu.Unlock()
	for _, id := range []string{"r1", "r2"} {
		if _, ok := b.servedUpTo(id); ok {
			t.Fatalf("%s is still found after its conversation was forgotten", id)
		}
	}
	if _, ok := b.servedUpTo("r3"); !ok {
		t.Fatal("the fork went with the conversation it came from")
	}
	if len(b.served) != 1 || b.lru.Len() != 1 {
		t.Fatalf("forgotten conversations left %d ids, %d entries", len(b.served), b.lru.Len())
	}
	if len(replaying) != 4 || replaying[0] == nil || !strings.HasPrefix(string(replaying[3]), "o2") {
		t.Fatal("forgetting a conversation cleared the items a request was replaying")
	}
	// What is left counts the fork alone: its three items and its one entry.
	if want := int64(3*52 + servedEntryBytes); b.used != want {
		t.Fatalf("used %d, want %d", b.used, want)
	}
}
