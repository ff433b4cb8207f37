package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codexrelay/codexrelay/proxy"
)

// A response.interrupt stops the running turn at once: the account's request ends (the
// upstream sees its client go), nothing more of the turn reaches the client, which gets
// response.incomplete (reason "interrupted") with the response id, and the next turn on the
// same socket is served.

// slowStream answers a Responses request with a stream that never ends on its own (a delta
// every 20 ms); stopped is closed when the request's context ends (the relay cancelled it).
type slowStream struct {
	once, startOnce sync.Once
	stopped         chan struct{}
	started         chan struct{}
}

func newSlowStream() *slowStream {
	return &slowStream{stopped: make(chan struct{}), started: make(chan struct{})}
}

func (s *slowStream) serve(w http.ResponseWriter, r *http.Request, n int) {
	if strings.Contains(string(readRecorded(r)), "again") { // the next turn answers at once
		answerText("after")(w, r, n)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_slow\",\"status\":\"in_progress\",\"output\":[]}}\n\n")
	w.(http.Flusher).Flush()
	s.startOnce.Do(func() { close(s.started) })
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			s.once.Do(func() { close(s.stopped) })
			return
		case <-tick.C:
			fmt.Fprintf(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"word \"}\n\n")
			w.(http.Flusher).Flush()
		}
	}
}

// waitClosed waits, bounded, for ch.
func waitClosed(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// readUntil reads events until one of type typ (bounded), returning them all.
func readUntil(t *testing.T, c *websocket.Conn, typ string) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var evs []map[string]any
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %s after %d events: %v", typ, len(evs), err)
		}
		var ev map[string]any
		json.Unmarshal(data, &ev)
		evs = append(evs, ev)
		if ev["type"] == typ {
			return evs
		}
	}
}

func TestAnInterruptStopsTheUpstreamTurn(t *testing.T) {
	slow := newSlowStream()
	up := newUpstream(t, slow.serve)
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", up))
	c := r.dial(t)
	ctx := context.Background()
	c.Write(ctx, websocket.MessageText, []byte(createFrame("", userItem("count slowly"))))
	started := readUntil(t, c, "response.output_text.delta")     // the turn streams
	id := started[0]["response"].(map[string]any)["id"].(string) // as the client knows it
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.interrupt","response_id":`+mustJSON(id)+`,"mode":"discard_partial_items"}`))
	waitClosed(t, slow.stopped, "the upstream request to end")
	evs := readUntil(t, c, "response.incomplete")
	end := last(evs)["response"].(map[string]any)
	if end["id"] != id || end["incomplete_details"].(map[string]any)["reason"] != "interrupted" {
		t.Fatalf("terminal event %v", last(evs))
	}
	tr := r.lastTrace(t, 1)
	if tr.Outcome != proxy.OutcomeCanceled || !strings.Contains(tr.Error, "interrupted by the client") || tr.Account != "a" {
		t.Fatalf("trace %+v", tr)
	}
	// The socket serves the next turn, and an interrupt that crosses a turn's end is ignored.
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.interrupt","response_id":"resp_gone"}`))
	// Codex continues from the interrupted response (testdata/codex-0.171/ws-interrupt).
	next := turn(t, c, createFrame(id, userItem("again")))
	if last(next)["type"] != "response.completed" || outputText(next) != "after" {
		t.Fatalf("next turn: %v", next)
	}
}

func TestAnInterruptClosesTheUpstreamSocketAndASteerReachesIt(t *testing.T) {
	u := newWSUpstream(t)
	steered := make(chan map[string]any, 1)
	u.answer = func(n int, c *websocket.Conn, f map[string]any) bool {
		switch f["type"] {
		case "response.steer":
			steered <- f
			return true
		case "response.create":
			if n > 0 {
				return false // later turns: the usual answer
			}
			c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"response.created","response":{"id":"resp_ws_slow","status":"in_progress","output":[]}}`))
			c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"response.output_text.delta","delta":"word "}`))
			return true // nothing more: the turn runs until it is steered or interrupted
		}
		return true
	}
	r := newRelay(t, proxy.Options{}, u.account("a"))
	c := r.dial(t)
	ctx := context.Background()
	c.Write(ctx, websocket.MessageText, []byte(createFrame("", userItem("count slowly"))))
	readUntil(t, c, "response.output_text.delta")
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.steer","response_id":"resp_ws_slow","input":[`+userItem("faster")+`]}`))
	select {
	case f := <-steered:
		if f["response_id"] != "resp_ws_slow" {
			t.Fatalf("steer %v", f)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the steer never reached the upstream socket")
	}
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.interrupt","response_id":"resp_ws_slow"}`))
	evs := readUntil(t, c, "response.incomplete")
	if last(evs)["response"].(map[string]any)["id"] != "resp_ws_slow" {
		t.Fatalf("terminal %v", last(evs))
	}
	eventually(t, "the upstream socket to close", func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		return u.closed == 1
	})
	// A steer with no turn running is answered clearly.
	ev := turn(t, c, `{"type":"response.steer","input":[]}`)
	if last(ev)["type"] != "error" || !strings.Contains(fmt.Sprint(last(ev)["error"]), "no_active_response") {
		t.Fatalf("a steer between turns: %v", ev)
	}
}

// An interrupt that names a response the relay never relayed, before the upstream's first
// event: the turn's response is named by the relay, never by the client's word, and the
// conversation continues from that name.
func TestAnInterruptBeforeTheFirstEventNamesNoResponseOfTheClients(t *testing.T) {
	stopped := make(chan struct{})
	var once sync.Once
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch {
		case r.Method == http.MethodGet:
			http.NotFound(w, r) // no WebSocket: the turns go over HTTP
			return
		case strings.Contains(string(readRecorded(r)), "again"):
			answerText("after")(w, r, n)
			return
		}
		<-r.Context().Done() // no first event: the relay cancels it
		once.Do(func() { close(stopped) })
	})
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", up))
	c := r.dial(t)
	ctx := context.Background()
	c.Write(ctx, websocket.MessageText, []byte(createFrame("", userItem("count slowly"))))
	eventually(t, "the upstream request", func() bool {
		for _, rec := range up.requests() {
			if strings.HasSuffix(rec.Path, "/responses") && len(rec.Body) > 0 {
				return true
			}
		}
		return false
	})
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.interrupt","response_id":"resp_made_up","mode":"discard_partial_items"}`))
	waitClosed(t, stopped, "the upstream request to end")
	end := last(readUntil(t, c, "response.incomplete"))["response"].(map[string]any)
	id, _ := end["id"].(string)
	if id == "" || id == "resp_made_up" {
		t.Fatalf("the interrupted response is named %q", id)
	}
	if next := turn(t, c, createFrame(id, userItem("again"))); outputText(next) != "after" {
		t.Fatalf("the next turn, from %s: %v", id, next)
	}
}
