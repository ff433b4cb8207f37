package proxy

import (
	"bytes"
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// A conversation over its own bound is forgotten; past the relay-wide bound the least recently
// used conversation is forgotten first; a forgotten response is not found, never an empty
// history.
func TestConversationBounds(t *testing.T) {
	b := newConvBudget(100, 80)
	item := func(n int) []byte { return []byte(strings.Repeat("x", n)) }
	empty := newConversation(b) // the least recently used, with nothing to forget
	a, c := newConversation(b), newConversation(b)
	a.commit(0, [][]byte{item(20)}, [][]byte{item(10)}, "a1", nil)
	c.commit(0, [][]byte{item(30)}, nil, "c1", nil)
	if h, ok := a.upTo("a1"); !ok || len(h) != 2 || b.lru.bytes() != 60 {
		t.Fatalf("a1: %v %d items, used %d", ok, len(h), b.lru.bytes())
	}
	// a is used again, so c is the least recently used when the relay-wide bound is passed.
	a.upTo("a1")
	a.commit(2, [][]byte{item(45)}, nil, "a2", nil)
	if b.lru.bytes() > b.lru.bound {
		t.Fatalf("used %d over the limit %d", b.lru.bytes(), b.lru.bound)
	}
	if _, ok := c.upTo("c1"); ok {
		t.Fatal("c1 survived the relay-wide bound; the least recently used conversation should go")
	}
	if h, ok := a.upTo("a2"); !ok || len(h) != 3 {
		t.Fatalf("a2 lost: %v", ok)
	}
	// A fork from a1 cuts the chain back: a2 is gone, a1 stays.
	a.commit(2, [][]byte{item(5)}, nil, "a3", nil)
	if _, ok := a.upTo("a2"); ok {
		t.Fatal("a2 survived a fork from a1")
	}
	if h, ok := a.upTo("a3"); !ok || len(h) != 3 {
		t.Fatalf("a3: %v %d", ok, len(h))
	}
	// Over its own bound, a conversation is forgotten whole.
	a.commit(3, [][]byte{item(50)}, nil, "a4", nil)
	if _, ok := a.upTo("a4"); ok || a.size != 0 {
		t.Fatalf("a4 kept past the per-connection bound (size %d)", a.size)
	}
	a.close()
	c.close()
	empty.close()
	if b.lru.bytes() != 0 || b.lru.count() != 0 {
		t.Fatalf("closed conversations left %d bytes, %d entries", b.lru.bytes(), b.lru.count())
	}
}

// The parameters a conversation keeps for response.append count in its size and the budget,
// are replaced by the next completed turn's, and go when the conversation is forgotten.
func TestConversationCountsItsParameters(t *testing.T) {
	b := newConvBudget(1000, 100)
	c := newConversation(b)
	params := func(n int) *payload.Object {
		o, err := payload.Parse([]byte(`{"instructions":"` + strings.Repeat("x", n) + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	c.commit(0, [][]byte{[]byte("0123456789")}, nil, "r1", params(20))
	if want := int64(10 + 20 + len(`{"instructions":""}`)); c.size != want || b.lru.bytes() != want || c.lastParams() == nil {
		t.Fatalf("size %d, used %d, want %d", c.size, b.lru.bytes(), want)
	}
	c.commit(1, nil, nil, "r2", params(1))
	if want := int64(10 + 1 + len(`{"instructions":""}`)); c.size != want || b.lru.bytes() != want {
		t.Fatalf("replaced parameters: size %d, used %d, want %d", c.size, b.lru.bytes(), want)
	}
	c.commit(1, nil, nil, "r3", params(200)) // over the per-connection bound: forgotten
	if c.lastParams() != nil || c.size != 0 || b.lru.bytes() != 0 {
		t.Fatalf("parameters over the bound kept: size %d, used %d", c.size, b.lru.bytes())
	}
	c.close()
}

// A turn's input items are kept in memory of their own, not as parts of the frame they came
// in; response.append keeps the last frame's parameters without its input.
func TestSocketKeepsItsItemsNotItsFrames(t *testing.T) {
	frame := []byte(`{"type":"response.create","model":"m","instructions":"` + strings.Repeat("x", 1<<20) + `","input":[{"type":"message","role":"user","content":"hi"}]}`)
	at := bytes.Index(frame, []byte(`{"type":"message"`))
	items := cloneItems([][]byte{frame[at : len(frame)-2]})
	if string(items[0]) != `{"type":"message","role":"user","content":"hi"}` || cap(items[0]) > 64 {
		t.Fatalf("item %q, capacity %d", items[0], cap(items[0]))
	}
	obj, err := payload.Parse(frame)
	if err != nil {
		t.Fatal(err)
	}
	last := withoutInput(obj)
	if _, has := last.Get("input"); has || last.Size >= len(frame) {
		t.Fatalf("kept the input (%d bytes of %d)", last.Size, len(frame))
	}
	if raw, _ := last.Get("instructions"); &raw[0] == &frame[len(`{"type":"response.create","model":"m","instructions":`)] {
		t.Fatal("the parameters are parts of the frame")
	}
}

// A connection forgets a response whose continuation the upstream refused: its end, and the
// items only it reached, with their bytes.
func TestConversationEvict(t *testing.T) {
	b := newConvBudget(1000, 1000)
	c := newConversation(b)
	c.commit(0, [][]byte{[]byte("aaaa")}, [][]byte{[]byte("bb")}, "r1", nil)
	c.commit(2, [][]byte{[]byte("cccc")}, [][]byte{[]byte("dd")}, "r2", nil)
	c.evict("r2")
	if _, ok := c.upTo("r2"); ok {
		t.Fatal("r2 survived its eviction")
	}
	if h, ok := c.upTo("r1"); !ok || len(h) != 2 || len(c.items) != 2 || b.lru.bytes() != 6 || c.size != 6 {
		t.Fatalf("after evicting r2: r1 %v, %d items, used %d", ok, len(c.items), b.lru.bytes())
	}
	c.evict("r9") // unknown: nothing happens
	c.evict("r1")
	if len(c.items) != 0 || b.lru.bytes() != 0 {
		t.Fatalf("after evicting r1: %d items, used %d", len(c.items), b.lru.bytes())
	}
	c.close()
}
