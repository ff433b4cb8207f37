package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The responses the relay served are indexed by id in the conversations' budget: continuing
// the last one extends its conversation, an earlier one forks a conversation of its own, and a
// forgotten conversation leaves the index and the list whole, while a request that was
// replaying its items still reads them intact.
func TestServedConversationsIndexAndForget(t *testing.T) {
	b := newConvBudget(1000, 600)
	item := func(s string, n int) []byte { return []byte(s + strings.Repeat("x", n)) }
	b.keepServed("", nil, [][]byte{item("u1", 50)}, [][]byte{item("o1", 50)}, "r1")
	base, ok := b.servedUpTo("r1")
	if !ok || len(base) != 2 {
		t.Fatalf("r1: %v, %d items", ok, len(base))
	}
	b.keepServed("r1", base, [][]byte{item("u2", 50)}, [][]byte{item("o2", 50)}, "r2")
	if b.served["r1"] != b.served["r2"] || b.lru.count() != 1 {
		t.Fatal("continuing the last response did not extend its conversation")
	}
	// A fork from r1: a conversation of its own; r2 stays.
	b.keepServed("r1", base, [][]byte{item("u3", 50)}, nil, "r3")
	if b.served["r3"] == b.served["r1"] || b.lru.count() != 2 {
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
	if len(b.served) != 1 || b.lru.count() != 1 {
		t.Fatalf("forgotten conversations left %d ids, %d entries", len(b.served), b.lru.count())
	}
	if len(replaying) != 4 || replaying[0] == nil || !strings.HasPrefix(string(replaying[3]), "o2") {
		t.Fatal("forgetting a conversation cleared the items a request was replaying")
	}
	// What is left counts the fork alone: its three items and its one entry.
	if want := int64(3*52 + servedEntryBytes); b.lru.bytes() != want {
		t.Fatalf("used %d, want %d", b.lru.bytes(), want)
	}
}

// bigConversation plants a served conversation of about size bytes in s, answered as id.
func bigConversation(s *Server, id string, size int) {
	item := []byte(`{"type":"message","role":"user","content":"` + strings.Repeat("x", size) + `"}`)
	out := []byte(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"noted"}]}`)
	s.convBudget().keepServed("", nil, [][]byte{item}, [][]byte{out}, id)
}

// chatUpstream is a Chat Completions server that counts the requests it holds at once and
// answers each once gate opens (nil: at once).
func chatUpstream(t *testing.T, gate chan struct{}, inFlight, peak *atomic.Int64) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet { // the catalog: none
			http.NotFound(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		peak.Store(max(peak.Load(), inFlight.Add(1)))
		defer inFlight.Add(-1)
		if gate != nil {
			select {
			case <-gate:
			case <-time.After(20 * time.Second):
			}
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(up.Close)
	return up
}

// Sixteen identical continuations of one large bridged conversation at once share one replay
// and one translation (issue 49: each built its own, 3.54 GB for a 60 MiB conversation): all
// sixteen are in flight together within a budget that holds two copies, not sixteen.
func TestIdenticalContinuationsShareOneReplay(t *testing.T) {
	const conv = 2 << 20
	gate := make(chan struct{})
	var inFlight, peak atomic.Int64
	up := chatUpstream(t, gate, &inFlight, &peak)
	s := New(Options{MemoryBudget: 16 << 20})
	s.SetAccounts([]Account{{Name: "llama", Kind: KindOpenAI, API: APIChat, BaseURL: up.URL + "/v1", Credentials: Static{Token: "sk-llama-123456"}}})
	bigConversation(s, "resp_big", conv)
	relay := httptest.NewServer(s)
	defer relay.Close()
	body := `{"model":"gpt-5","previous_response_id":"resp_big","input":"and then?"}`
	statuses := postAll(relay.URL+"/v1/responses", 16, func(int) string { return body })
	deadline := time.Now().Add(20 * time.Second)
	for inFlight.Load() < 16 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	n := inFlight.Load()
	close(gate)
	for range 16 {
		if st := <-statuses; st != 200 {
			t.Errorf("a continuation was answered %d", st)
		}
	}
	if n != 16 {
		t.Fatalf("%d of 16 continuations reached the upstream together: they did not share one replay", n)
	}
	if p := s.mem.peakUse(); p > 3*conv+conv/2 {
		t.Fatalf("the budget held %d bytes at its peak: more than one replay and its translation", p)
	}
	for end := time.Now().Add(10 * time.Second); s.mem.inUse() != 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond) // the handlers end just after their answers
	}
	if u := s.mem.inUse(); u != 0 {
		t.Fatalf("%d bytes still held after every request ended", u)
	}
}

// Different continuations of one large conversation each build their replay, counted against
// the budget: what they hold at once never passes it, and every one is answered.
func TestReplaysAreCountedInTheBudget(t *testing.T) {
	const conv = 2 << 20
	var inFlight, peak atomic.Int64
	up := chatUpstream(t, nil, &inFlight, &peak)
	s := New(Options{MemoryBudget: 8 << 20})
	s.SetAccounts([]Account{{Name: "llama", Kind: KindOpenAI, API: APIChat, BaseURL: up.URL + "/v1", Credentials: Static{Token: "sk-llama-123456"}}})
	bigConversation(s, "resp_big", conv)
	relay := httptest.NewServer(s)
	defer relay.Close()
	statuses := postAll(relay.URL+"/v1/responses", 8, func(i int) string {
		return fmt.Sprintf(`{"model":"gpt-5","previous_response_id":"resp_big","input":"question %d"}`, i)
	})
	for range 8 {
		if st := <-statuses; st != 200 {
			t.Errorf("a continuation was answered %d", st)
		}
	}
	if p := s.mem.peakUse(); p > 8<<20 || p < conv {
		t.Fatalf("the budget's peak %d: the replays were not counted, or passed it", p)
	}
	for end := time.Now().Add(10 * time.Second); s.mem.inUse() != 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond) // the handlers end just after their answers
	}
	if u := s.mem.inUse(); u != 0 {
		t.Fatalf("%d bytes still held after every request ended", u)
	}
}

// postAll posts n bodies (body(i)) to url at once; each status arrives on the channel (0: no
// answer within a minute).
func postAll(url string, n int, body func(int) string) <-chan int {
	statuses := make(chan int, n)
	client := &http.Client{Timeout: time.Minute}
	for i := range n {
		go func() {
			resp, err := client.Post(url, "application/json", strings.NewReader(body(i)))
			if err != nil {
				statuses <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	return statuses
}
