package proxy

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestCompactionStoreKeepsTwoPerConversationWithinItsBudget(t *testing.T) {
	cs := newCompactionStore(1 << 20)
	body := func(n int) []byte { return []byte(fmt.Sprintf(`{"model":"m","input":[{"type":"message","n":%d}]}`, n)) }
	for i := range 5 {
		cs.keep(uint64(i), "conv-1", "a", body(i))
	}
	for d, want := range []bool{false, false, false, true, true} {
		if _, _, ok := cs.request(uint64(d)); ok != want {
			t.Fatalf("compaction %d kept: %v, want %v (the latest two of a conversation)", d, ok, want)
		}
	}
	got, sealer, _ := cs.request(4)
	if !bytes.Equal(got, body(4)) || sealer != "a" {
		t.Fatalf("request 4: %s by %q", got, sealer)
	}

	// Past its budget, the store forgets the least recently used, whatever the conversation.
	noise := func() []byte { // incompressible, so that the budget counts it
		b := make([]byte, 100<<10)
		for i := range b {
			b[i] = byte(rand.IntN(256))
		}
		return b
	}
	for i := range 15 {
		cs.keep(uint64(100+i), fmt.Sprintf("conv-%d", 100+i), "a", noise())
	}
	if size, n := cs.usage(); size > 1<<20 {
		t.Fatalf("the store holds %d bytes in %d entries, over its budget of 1 MiB", size, n)
	}
	if _, _, ok := cs.request(100); ok {
		t.Fatal("the least recently used compaction was kept past the budget")
	}
	if _, _, ok := cs.request(114); !ok {
		t.Fatal("the latest compaction was forgotten")
	}
	// A request larger than an eighth of the budget is not kept.
	big := append(noise(), noise()...)
	cs.keep(999, "conv-big", "a", big)
	if _, _, ok := cs.request(999); ok {
		t.Fatal("a request over an eighth of the budget was kept")
	}
}

func TestCompactionStoreRemembersWhatEachAccountMade(t *testing.T) {
	cs := newCompactionStore(0)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if _, ask := cs.remadeFor(1, "b", now); ask {
		t.Fatal("asked to re-make a compaction whose request is not kept")
	}
	cs.keep(1, "conv", "a", []byte(`{"input":[]}`))
	if item, ask := cs.remadeFor(1, "b", now); item != nil || !ask {
		t.Fatal("a kept compaction is not to be re-made")
	}
	cs.setRemade(1, "b", []byte(`{"type":"compaction"}`), time.Time{})
	if item, ask := cs.remadeFor(1, "b", now); item == nil || ask {
		t.Fatal("b's compaction was not kept")
	}
	cs.setRemade(1, "c", nil, now.Add(cannotRetry))
	if _, ask := cs.remadeFor(1, "c", now.Add(time.Minute)); ask {
		t.Fatal("c, which could not compact, is asked again at once")
	}
	if _, ask := cs.remadeFor(1, "c", now.Add(cannotRetry+time.Second)); !ask {
		t.Fatal("c is never asked again")
	}
}
