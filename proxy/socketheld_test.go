package proxy_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codexrelay/codexrelay/proxy"
)

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// What an idle socket keeps of its frames is bounded by the conversations' budget: sockets
// that each sent one large frame and stay open hold at most that budget, whether the frame was
// refused (no model: a 400 without an upstream call) or completed. The attack of issue 30:
// the frame's parameters outside input (a large instructions, an unknown member) were kept
// whole, outside every budget, for as long as the socket stayed open.
func TestIdleSocketsHoldAtMostTheConversationBudget(t *testing.T) {
	const (
		sockets = 8
		pad     = 4 << 20
		budget  = 8 << 20
	)
	up := newWSUpstream(t)
	up.answer = func(n int, c *websocket.Conn, _ map[string]any) bool {
		up.mu.Lock()
		up.frames = nil // the fake upstream keeps no frame: what stays is the relay's
		up.mu.Unlock()
		for _, ev := range textEvents(fmt.Sprintf("resp_ws_%d", n), "gpt-5-codex", "hi") {
			c.Write(context.Background(), websocket.MessageText, []byte(sseData(ev)))
		}
		return true
	}
	r := newRelay(t, proxy.Options{MaxBodyBytes: 16 << 20, ConversationBudget: budget}, up.account("a"))
	padded := func(frame string) string {
		return strings.Replace(frame, `"instructions":"be brief"`, `"instructions":"be brief","x_unknown":"`+strings.Repeat("x", pad)+`"`, 1)
	}
	refused := padded(strings.Replace(createFrame("", userItem("hi")), `"model":"gpt-5-codex",`, "", 1))
	completed := padded(createFrame("", userItem("hi")))
	before := heapInUse()
	var held []*websocket.Conn
	for i := range sockets {
		c := r.dial(t)
		held = append(held, c)
		frame, want := refused, "error"
		if i%2 == 1 {
			frame, want = completed, "response.completed"
		}
		if ev := last(turn(t, c, frame)); ev["type"] != want {
			t.Fatalf("socket %d answered %v, want %s", i, ev, want)
		}
	}
	// The frames are answered and let go; what stays is what the sockets keep.
	eventually(t, "the last turn to end", func() bool {
		st := r.Stats().Requests
		return st.InFlight == 0 && st.SocketFrameBytes == 0
	})
	grown := heapInUse() - before
	runtime.KeepAlive(refused) // part of the floor, as in before
	runtime.KeepAlive(completed)
	if limit := int64(budget + 6<<20); grown > limit {
		t.Fatalf("%d idle sockets that each sent a %d MiB frame hold %d MiB, over the conversation budget %d MiB (+6 MiB slack)",
			sockets, pad>>20, grown>>20, budget>>20)
	}
	t.Logf("floor %d MiB; %d idle sockets after %d MiB frames hold %.1f MiB (conversation budget %d MiB)", before>>20, sockets, pad>>20, float64(grown)/(1<<20), budget>>20)
	for _, c := range held {
		c.Close(websocket.StatusNormalClosure, "")
	}
	eventually(t, "the sockets to close", func() bool { return r.Stats().Requests.WebSockets == 0 })
}

// response.append continues with the parameters of the last response.create that completed,
// not those of a later frame the relay refused.
func TestAppendKeepsTheLastCompletedParameters(t *testing.T) {
	up := newWSUpstream(t)
	r := newRelay(t, proxy.Options{}, up.account("a"))
	c := r.dial(t)
	responseID(t, turn(t, c, createFrame("", userItem("one"))))
	bad := strings.Replace(createFrame("", userItem("two")), `"model":"gpt-5-codex",`, `"model":"",`, 1)
	if ev := last(turn(t, c, bad)); ev["type"] != "error" {
		t.Fatalf("a frame with an empty model answered %v", ev)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.append","input":[`+userItem("three")+`]}`)); err != nil {
		t.Fatal(err)
	}
	responseID(t, readTurn(t, ctx, c))
	got := up.got()
	if m := string(field(t, got[len(got)-1], "model")); m != `"gpt-5-codex"` {
		t.Fatalf("response.append went up with model %s, want the completed turn's", m)
	}
}
