package proxy_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codexrelay/codexrelay/proxy"
)

// closeStatus waits for the relay to close c and returns the status it closed with.
func closeStatus(t *testing.T, c *websocket.Conn) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

// Frames being read are bounded relay-wide: 8 sockets each sending a 2 MiB frame (one alone
// fits) against an 8 MiB budget get most of them closed with 1013 before their frame is held,
// and whatever was held is given back.
func TestSocketFrameBudget(t *testing.T) {
	up := newWSUpstream(t)
	r := newRelay(t, proxy.Options{MaxBodyBytes: 64 << 20, SocketReadBudget: 8 << 20}, up.account("a"))
	big := createFrame("", userItem("tiny")) // then padded to 2 MiB in instructions
	big = strings.Replace(big, `"instructions":"be brief"`, `"instructions":"`+strings.Repeat("x", 2<<20)+`"`, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[websocket.StatusCode]int{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := r.dial(t)
			c.Write(context.Background(), websocket.MessageText, []byte(big))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var code websocket.StatusCode = -1
			for {
				_, data, err := c.Read(ctx)
				if err != nil {
					code = websocket.CloseStatus(err)
					break
				}
				if strings.Contains(string(data), `"response.completed"`) {
					break
				}
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
			c.Close(websocket.StatusNormalClosure, "")
		}()
	}
	wg.Wait()
	if codes[websocket.StatusTryAgainLater] == 0 {
		t.Fatalf("no socket was refused for the budget: %v", codes)
	}
	eventually(t, "the budget to be given back", func() bool { return r.Stats().Requests.SocketFrameBytes == 0 })
}

// A frame that stalls half-way is cut like a stalled HTTP body; a socket that never speaks, or
// idles between turns past the limit, is closed; the number of open sockets is bounded.
func TestSocketDeadlinesAndCap(t *testing.T) {
	up := newWSUpstream(t)
	// The idle limit is long beside a loopback dial (even under the race detector), short
	// beside the test's patience.
	r := newRelay(t, proxy.Options{BodyIdleTimeout: 200 * time.Millisecond, SocketIdle: 2 * time.Second, MaxSockets: 3}, up.account("a"))

	stalled := r.dial(t)
	w, err := stalled.Writer(context.Background(), websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	// More than the writer buffers, so that part of the frame goes out; then nothing more.
	w.Write([]byte(`{"type":"response.create","instructions":"` + strings.Repeat("x", 256<<10)))
	if got := closeStatus(t, stalled); got != websocket.StatusPolicyViolation {
		t.Fatalf("stalled frame: closed with %v, want 1008", got)
	}

	silent := r.dial(t)
	if got := closeStatus(t, silent); got != websocket.StatusGoingAway {
		t.Fatalf("silent socket: closed with %v, want 1001", got)
	}

	// A turn, then silence: closed after it, not during it.
	talker := r.dial(t)
	responseID(t, turn(t, talker, createFrame("", userItem("one"))))
	if got := closeStatus(t, talker); got != websocket.StatusGoingAway {
		t.Fatalf("idle after a turn: closed with %v, want 1001", got)
	}
	eventually(t, "the sockets to close", func() bool { return r.Stats().Requests.WebSockets == 0 })

	r2 := newRelay(t, proxy.Options{MaxSockets: 2}, up.account("a"))
	r2.dial(t)
	r2.dial(t)
	eventually(t, "two sockets open", func() bool { return r2.Stats().Requests.WebSockets == 2 })
	_, resp, err := websocket.Dial(context.Background(), strings.Replace(r2.URL, "http", "ws", 1)+"/v1/responses", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third socket: %v %v", resp, err)
	}
	if e := decodeErr(t, resp); e.Error.Code != "too_many_sockets" {
		t.Fatalf("a third socket: %+v", e)
	}
}

// A single frame that does not fit the budget even alone is closed with 1009 (message too big,
// which a client does not retry as it is), not 1013 (try again later); issue 30, 12.
func TestSocketFrameTooBigAloneIs1009(t *testing.T) {
	up := newWSUpstream(t)
	r := newRelay(t, proxy.Options{MaxBodyBytes: 64 << 20, SocketReadBudget: 8 << 20}, up.account("a"))
	c := r.dial(t)
	big := strings.Replace(createFrame("", userItem("tiny")), `"instructions":"be brief"`, `"instructions":"`+strings.Repeat("x", 9<<20)+`"`, 1)
	go c.Write(context.Background(), websocket.MessageText, []byte(big))
	if got := closeStatus(t, c); got != websocket.StatusMessageTooBig {
		t.Fatalf("a frame larger than the budget on an idle relay: closed with %v, want 1009", got)
	}
	eventually(t, "the budget to be given back", func() bool { return r.Stats().Requests.SocketFrameBytes == 0 })
}
