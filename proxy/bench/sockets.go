package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/codexrelay/codexrelay/proxy"
)

// `bench sockets`: what hostile WebSocket clients cost the relay's memory, against the bounds it
// keeps (the attacks of the reliability review): many sockets each sending one huge frame at
// once, one socket chaining turns of huge frames whose input is one tiny item, and many sockets
// that each send one huge frame (refused for its missing model, or completed) and then stay
// open, idle, for what they hold (issue 30: a socket kept its last frame). The relay
// runs in this process with its defaults; the clients stream their frames from one small
// buffer, so the process's peak resident memory is the relay's (plus a baseline read first).

// SocketsOptions configure Sockets; zero values take the defaults.
type SocketsOptions struct {
	Sockets    int // sockets sending one huge frame at once (default 20)
	FrameBytes int // bytes of each huge frame (default 60 MiB)
	Turns      int // turns of the chained socket (default 16)
	Held       int // sockets that send one huge frame each and stay open (default 40)
}

// SocketsResult is what `codexrelay bench sockets --json` prints; memory in bytes.
type SocketsResult struct {
	Sockets      int   `json:"sockets"`
	FrameBytes   int   `json:"frameBytes"`
	Turns        int   `json:"turns"`
	BaselineRSS  int64 `json:"baselineRSSBytes"`
	BurstPeakRSS int64 `json:"burstPeakRSSBytes"` // while Sockets sockets each send a huge frame
	BurstRefused int   `json:"burstRefused"`      // sockets closed with 1013 for the frame budget
	ChainPeakRSS int64 `json:"chainPeakRSSBytes"` // one socket, Turns huge frames, tiny input
	ChainAnswers int   `json:"chainAnswers"`      // turns answered
	// Held sockets, one after the other, each send one huge frame (every other one without a
	// model: refused, no upstream call) and stay open: the peak while they send, and the settled
	// RSS while all of them are still open.
	Held        int   `json:"held"`
	HeldPeakRSS int64 `json:"heldPeakRSSBytes"`
	HeldRSS     int64 `json:"heldRSSBytes"`
	HeldAnswers int   `json:"heldAnswers"`   // completed turns among them
	AfterRSS    int64 `json:"afterRSSBytes"` // once every socket closed
	// Budget is the relay's bound of frames being read (the peaks should stay near baseline
	// plus it); ConversationBudget its bound of what the connections keep between turns (the
	// held RSS should stay near baseline plus it).
	Budget             int64 `json:"frameBudgetBytes"`
	ConversationBudget int64 `json:"conversationBudgetBytes"`
}

// Sockets runs the attacks and reports the memory figures.
func Sockets(opt SocketsOptions) (SocketsResult, error) {
	if opt.Sockets <= 0 {
		opt.Sockets = 20
	}
	if opt.FrameBytes <= 0 {
		opt.FrameBytes = 60 << 20
	}
	if opt.Turns <= 0 {
		opt.Turns = 16
	}
	if opt.Held <= 0 {
		opt.Held = 40
	}
	res := SocketsResult{Sockets: opt.Sockets, FrameBytes: opt.FrameBytes, Turns: opt.Turns, Held: opt.Held,
		Budget: 128 << 20, ConversationBudget: 64 << 20} // the relay's defaults (proxy/budgets.go)
	// The benchmark's plain upstream: it answers the upgrade as a GET (no WebSocket), so the relay
	// sends each turn over HTTP, whose body the upstream reads and lets go.
	relay, base, stop, err := benchRelay()
	if err != nil {
		return res, err
	}
	defer stop()
	res.BaselineRSS, _ = Settle(relay)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a := &socketAttack{ctx: ctx, relay: relay, url: "ws" + strings.TrimPrefix(base, "http") + "/responses",
		frameBytes: opt.FrameBytes, chunk: []byte(strings.Repeat("x", 1<<20))}
	for _, step := range []func(*SocketsResult) error{a.burst, a.chain, a.hold} {
		if err := resetPeakRSS(0); err != nil {
			return res, err
		}
		if err := step(&res); err != nil {
			return res, err
		}
	}
	res.AfterRSS, _ = Settle(relay)
	return res, nil
}

// socketAttack is the hostile clients of Sockets: each frame is streamed from one chunk,
// `{"type":"response.create","model":...,"instructions":"xxxx…","input":[tiny]}` written piece
// by piece, so that the clients hold next to nothing.
type socketAttack struct {
	ctx        context.Context
	relay      *proxy.Server
	url        string
	frameBytes int
	chunk      []byte
}

// dial opens a client socket to the relay.
func (a *socketAttack) dial() (*websocket.Conn, error) {
	c, _, err := websocket.Dial(a.ctx, a.url, nil)
	if err == nil {
		c.SetReadLimit(64 << 20)
	}
	return c, err
}

// send streams one huge frame, with a model (a turn the relay serves) or without (refused).
func (a *socketAttack) send(c *websocket.Conn, model bool) error {
	w, err := c.Writer(a.ctx, websocket.MessageText)
	if err != nil {
		return err
	}
	if model {
		io.WriteString(w, `{"type":"response.create","model":"bench-small","store":false,"instructions":"`)
	} else {
		io.WriteString(w, `{"type":"response.create","store":false,"instructions":"`)
	}
	for n := 0; n < a.frameBytes; n += len(a.chunk) {
		if _, err := w.Write(a.chunk[:min(len(a.chunk), a.frameBytes-n)]); err != nil {
			return err
		}
	}
	io.WriteString(w, `","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`)
	return w.Close()
}

// burst: res.Sockets sockets each send one huge frame at once.
func (a *socketAttack) burst(res *SocketsResult) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range res.Sockets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := a.dial()
			if err != nil {
				return
			}
			defer c.CloseNow()
			a.send(c, true)
			if ok, _, code := answer(a.ctx, c); !ok && code == websocket.StatusTryAgainLater {
				mu.Lock()
				res.BurstRefused++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.BurstPeakRSS = procStatus(0, "VmHWM")
	return nil
}

// chain: one socket chains res.Turns turns of huge frames.
func (a *socketAttack) chain(res *SocketsResult) error {
	c, err := a.dial()
	if err != nil {
		return fmt.Errorf("bench sockets: %w", err)
	}
	for range res.Turns {
		if a.send(c, true) != nil {
			break
		}
		if ok, _, _ := answer(a.ctx, c); !ok {
			break
		}
		res.ChainAnswers++
	}
	res.ChainPeakRSS = procStatus(0, "VmHWM")
	c.Close(websocket.StatusNormalClosure, "")
	return nil
}

// hold: res.Held sockets, one after the other, each send one huge frame (every other one
// without a model) and stay open; then they all close.
func (a *socketAttack) hold(res *SocketsResult) error {
	var held []*websocket.Conn
	for i := range res.Held {
		a.quiet()
		c, err := a.dial()
		if err != nil {
			break
		}
		held = append(held, c)
		if a.send(c, i%2 == 1) != nil {
			break
		}
		if ok, completed, _ := answer(a.ctx, c); !ok {
			break
		} else if completed {
			res.HeldAnswers++
		}
	}
	res.HeldPeakRSS = procStatus(0, "VmHWM")
	a.quiet()
	res.HeldRSS, _ = Settle(a.relay)
	for _, c := range held {
		c.Close(websocket.StatusNormalClosure, "")
	}
	for a.relay.Stats().Requests.WebSockets > 0 && a.ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// quiet waits for the relay to have let go of the frames it read: a frame is released after
// its answer was sent, and the next one would otherwise meet the budget it holds.
func (a *socketAttack) quiet() {
	for st := a.relay.Stats().Requests; (st.SocketFrameBytes > 0 || st.InFlight > 0) && a.ctx.Err() == nil; st = a.relay.Stats().Requests {
		time.Sleep(5 * time.Millisecond)
	}
}

// answer reads one turn's events up to its terminal one: whether it came, whether it was
// response.completed, and the close status when the relay closed the socket instead.
func answer(ctx context.Context, c *websocket.Conn) (ok, completed bool, code websocket.StatusCode) {
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return false, false, websocket.CloseStatus(err)
		}
		s := string(data)
		if strings.Contains(s, `"type":"response.completed"`) {
			return true, true, 0
		}
		if strings.Contains(s, `"type":"error"`) {
			return true, false, 0
		}
	}
}

// Print writes the result as a table.
func (r SocketsResult) Print(w io.Writer) {
	fmt.Fprintf(w, "Hostile WebSocket clients against the relay's bounds (frames being read: %s at most):\n\n", mb(r.Budget))
	fmt.Fprintf(w, "baseline                          RSS %s\n", mb(r.BaselineRSS))
	fmt.Fprintf(w, "%d sockets x one %s frame       peak RSS %s [baseline + budget: %s]; %d closed with 1013 (try again later)\n",
		r.Sockets, mb(int64(r.FrameBytes)), mb(r.BurstPeakRSS), mb(r.BaselineRSS+r.Budget), r.BurstRefused)
	fmt.Fprintf(w, "one socket x %d turns of %s     peak RSS %s; %d turns answered (each input one tiny item)\n",
		r.Turns, mb(int64(r.FrameBytes)), mb(r.ChainPeakRSS), r.ChainAnswers)
	fmt.Fprintf(w, "%d sockets x one %s frame, held  peak RSS %s; held open RSS %s [baseline + conversation budget: %s]; %d of them completed\n",
		r.Held, mb(int64(r.FrameBytes)), mb(r.HeldPeakRSS), mb(r.HeldRSS), mb(r.BaselineRSS+r.ConversationBudget), r.HeldAnswers)
	fmt.Fprintf(w, "after every socket closed         RSS %s\n", mb(r.AfterRSS))
}

// benchRelay is a relay with one API-key account on the benchmark's plain upstream (which
// answers a WebSocket upgrade as a GET, so turns go over HTTP), served on loopback; stop ends
// both.
func benchRelay() (relay *proxy.Server, base string, stop func(), err error) {
	up, err := newBenchUpstream()
	if err != nil {
		return nil, "", nil, err
	}
	relay = proxy.New(proxy.Options{Catalog: proxy.CatalogOptions{RefreshInterval: -1}})
	relay.SetAccounts([]proxy.Account{{Name: "bench", Kind: proxy.KindOpenAI, BaseURL: up.url + "/v1", Credentials: proxy.Static{Token: "sk-bench"}}})
	base, stopRelay, err := serveOnLoopback(relay)
	if err != nil {
		up.close()
		return nil, "", nil, err
	}
	return relay, base, func() { stopRelay(); up.close() }, nil
}
