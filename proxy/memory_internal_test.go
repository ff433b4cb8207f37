package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// What requests hold at once stays within the budget: a request that would pass it waits for
// room, which the others give back when they end, and past the wait gets 503 relay_busy with a
// Retry-After.
func TestMemoryBudgetIsSharedAcrossRequests(t *testing.T) {
	s := New(Options{MemoryBudget: 1 << 20})
	s.mem.wait = 200 * time.Millisecond
	exch := func() *exchange { return &exchange{s: s, r: httptest.NewRequest("POST", "/v1/responses", nil)} }
	a, b := exch(), exch()
	if e := a.hold(700 << 10); e != nil {
		t.Fatal(e)
	}
	// b waits while a holds: a ends within the wait, and b gets its room.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); time.Sleep(20 * time.Millisecond); a.releaseMemory() }()
	if e := b.hold(700 << 10); e != nil {
		t.Fatalf("b did not get the room a gave back: %v", e)
	}
	wg.Wait()
	// c waits past the wait: 503 with a Retry-After.
	c := exch()
	e := c.hold(700 << 10)
	if e == nil || e.Status != 503 || e.Code != "relay_busy" || e.RetryAfter <= 0 {
		t.Fatalf("c: %+v", e)
	}
	b.releaseMemory()
	// A request larger than the whole budget is held to what a large request may hold (all but
	// the reserve for small ones), never refused for its size.
	d := exch()
	if e := d.hold(5 << 20); e != nil || d.memHeld != 1<<20-(1<<20)/8 {
		t.Fatalf("d: %+v, held %d", e, d.memHeld)
	}
	d.releaseMemory()
}

// A small request never waits behind a large one: the large ones may hold all but an eighth of
// the budget, and a large request waiting for room does not queue the small ones behind it.
func TestSmallRequestsNeverWaitBehindLargeOnes(t *testing.T) {
	s := New(Options{MemoryBudget: 64 << 20})
	s.mem.wait = time.Hour // a test that waited would hang until its deadline: none may
	exch := func() *exchange { return &exchange{s: s, r: httptest.NewRequest("POST", "/v1/responses", nil)} }
	hogs := []*exchange{exch(), exch()}
	if e := hogs[0].hold(40 << 20); e != nil {
		t.Fatal(e)
	}
	if e := hogs[1].hold(16 << 20); e != nil { // 56 MiB: all a large request may take
		t.Fatal(e)
	}
	// A third large request waits for room...
	waiting := exch()
	got := make(chan *apiError, 1)
	go func() { got <- waiting.hold(8 << 20) }()
	// ...while small ones take the reserve at once, one after the other.
	for i := range 7 {
		small := exch()
		done := make(chan *apiError, 1)
		go func() { done <- small.hold(1 << 20) }()
		select {
		case e := <-done:
			if e != nil {
				t.Fatalf("small request %d: %+v", i, e)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("small request %d waited behind the large ones", i)
		}
	}
	select {
	case e := <-got:
		t.Fatalf("the large request got room that is not there: %+v", e)
	default:
	}
	hogs[0].releaseMemory()
	select {
	case e := <-got:
		if e != nil {
			t.Fatal(e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the large request did not get the room given back")
	}
}

// A body is counted as it arrives, not at the size it declares; a request that finds no room
// for its body is answered 503 relay_busy with a Retry-After, never 408, and its connection
// closed.
func TestABodyIsCountedAsItArrives(t *testing.T) {
	s := New(Options{MemoryBudget: 32 << 20})
	s.mem.wait = 100 * time.Millisecond
	pr, pw := io.Pipe()
	defer pw.Close()
	r := httptest.NewRequest("POST", "/v1/responses", pr)
	r.ContentLength = 60 << 20
	x := &exchange{s: s, r: r, w: httptest.NewRecorder()}
	read := make(chan *apiError, 1)
	go func() {
		_, e := readBody(x.w, r, bodyLimits{size: 64 << 20, idle: time.Hour, total: time.Hour}, &x.admit.stall, nil, x.hold)
		read <- e
	}()
	pw.Write([]byte(`{"model":"gpt-5","input":"`))
	deadline := time.Now().Add(10 * time.Second)
	for s.mem.inUse() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if held := s.mem.inUse(); held == 0 || held > firstBodyBuffer {
		t.Fatalf("a 60 MiB body of which 26 bytes arrived holds %d bytes of the budget", held)
	}
	// A small request beside it gets room, and a large one that does not fit gets 503.
	small := &exchange{s: s, r: httptest.NewRequest("POST", "/v1/responses", nil)}
	if e := small.hold(100); e != nil {
		t.Fatal(e)
	}
	big := &exchange{s: s, r: httptest.NewRequest("POST", "/v1/responses", nil)}
	if e := big.hold(23 << 20); e != nil {
		t.Fatal(e)
	}
	go pw.Write(bytes.Repeat([]byte("x"), 6<<20)) // past its 4 MiB: 4 more, which are not there
	e := <-read
	w := x.w.(*httptest.ResponseRecorder)
	if e == nil || e.Status != 503 || e.Code != "relay_busy" || e.RetryAfter <= 0 || w.Header().Get("Connection") != "close" {
		t.Fatalf("a body with no room: %+v, Connection %q", e, w.Header().Get("Connection"))
	}
}

// An answer relayed as it comes has the account's credential masked, wherever the writes cut
// it.
func TestMaskWriterMasksAcrossWrites(t *testing.T) {
	secret := "access-token-1234567890"
	text := "a" + secret + "b" + strings.Repeat("x", 100) + secret + secret + "end"
	for cut := 1; cut < 40; cut++ {
		var out bytes.Buffer
		m := newMaskWriter(&out, secret)
		for i := 0; i < len(text); i += cut {
			m.Write([]byte(text[i:min(i+cut, len(text))]))
		}
		m.Close()
		want := strings.ReplaceAll(text, secret, mask(secret))
		if out.String() != want {
			t.Fatalf("cut %d: %q, want %q", cut, out.String(), want)
		}
	}
}

// An answer the relay finds no room to hold within the wait is the relay's matter, not the
// account's: the client gets 503 relay_busy, and the account no failure.
func TestNoRoomForAnAnswerIsNoFailureOfTheAccount(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"resp_1","object":"response","status":"completed","output":[]}`)
	}))
	defer up.Close()
	s := New(Options{MemoryBudget: 64 << 10})
	s.mem.wait = 50 * time.Millisecond
	s.SetAccounts([]Account{{Name: "a", Kind: KindOpenAI, BaseURL: up.URL + "/v1", Credentials: Static{Token: "sk-a-12345678"}}})
	hog := &exchange{s: s, r: httptest.NewRequest("POST", "/v1/responses", nil)}
	body := `{"model":"gpt-5","input":"hi"}`
	if e := hog.hold(64<<10 - int64(len(body)) - 1); e != nil { // all but the request's own body
		t.Fatal(e)
	}
	defer hog.releaseMemory()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "http://127.0.0.1/v1/responses", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	s.ServeHTTP(rec, req)
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "relay_busy") || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if st := s.Stats().Accounts[0]; st.State != StateReady || st.LastError != "" {
		t.Fatalf("the account: %+v", st)
	}
}
