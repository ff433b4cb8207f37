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
// once, and one socket chaining turns of huge frames whose input is one tiny item. The relay
// runs in this process with its defaults; the clients stream their frames from one small
// buffer, so the process's peak resident memory is the relay's (plus a baseline read first).

// SocketsOptions configure Sockets; zero values take the defaults.
type SocketsOptions struct {
	Sockets    int // sockets sending one huge frame at once (default 20)
	FrameBytes int // bytes of each huge frame (default 60 MiB)
	Turns      int // turns of the chained socket (default 16)
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
	AfterRSS     int64 `json:"afterRSSBytes"`     // once every socket closed
	// Budget is the relay's bound of frames being read (the peaks should stay near baseline
	// plus it).
	Budget int64 `json:"frameBudgetBytes"`
}

// Sockets runs both attacks and reports the memory figures.
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
	res := SocketsResult{Sockets: opt.Sockets, FrameBytes: opt.FrameBytes, Turns: opt.Turns, Budget: 128 << 20}
	// The benchmark's plain upstream: it answers the upgrade as a GET (no WebSocket), so the relay
	// sends each turn over HTTP, whose body the upstream reads and lets go.
	up, err := newBenchUpstream()
	if err != nil {
		return res, err
	}
	defer up.close()
	relay := proxy.New(proxy.Options{Catalog: proxy.CatalogOptions{RefreshInterval: -1}})
	relay.SetAccounts([]proxy.Account{{Name: "bench", Kind: proxy.KindOpenAI, BaseURL: up.url + "/v1", Credentials: proxy.Static{Token: "sk-bench"}}})
	base, stop, err := serveOnLoopback(relay)
	if err != nil {
		return res, err
	}
	defer stop()
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/responses"
	res.BaselineRSS, _ = Settle(relay)

	// One chunk every frame is streamed from: `{"type":"response.create","model":...,
	// "instructions":"xxxx…","input":[tiny]}` written piece by piece.
	chunk := []byte(strings.Repeat("x", 1<<20))
	send := func(ctx context.Context, c *websocket.Conn) error {
		w, err := c.Writer(ctx, websocket.MessageText)
		if err != nil {
			return err
		}
		io.WriteString(w, `{"type":"response.create","model":"bench-small","store":false,"instructions":"`)
		for n := 0; n < opt.FrameBytes; n += len(chunk) {
			if _, err := w.Write(chunk[:min(len(chunk), opt.FrameBytes-n)]); err != nil {
				return err
			}
		}
		io.WriteString(w, `","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`)
		return w.Close()
	}
	dial := func(ctx context.Context) (*websocket.Conn, error) {
		c, _, err := websocket.Dial(ctx, wsURL, nil)
		if err == nil {
			c.SetReadLimit(64 << 20)
		}
		return c, err
	}
	// answered reads one turn's events; false when the relay closed the socket.
	answered := func(ctx context.Context, c *websocket.Conn) (bool, websocket.StatusCode) {
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return false, websocket.CloseStatus(err)
			}
			if s := string(data); strings.Contains(s, `"type":"response.completed"`) || strings.Contains(s, `"type":"error"`) {
				return true, 0
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The burst.
	if err := resetPeakRSS(0); err != nil {
		return res, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range opt.Sockets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(ctx)
			if err != nil {
				return
			}
			defer c.CloseNow()
			send(ctx, c)
			if ok, code := answered(ctx, c); !ok && code == websocket.StatusTryAgainLater {
				mu.Lock()
				res.BurstRefused++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.BurstPeakRSS = procStatus(0, "VmHWM")

	// The chain.
	if err := resetPeakRSS(0); err != nil {
		return res, err
	}
	c, err := dial(ctx)
	if err != nil {
		return res, fmt.Errorf("bench sockets: %w", err)
	}
	for range opt.Turns {
		if send(ctx, c) != nil {
			break
		}
		ok, _ := answered(ctx, c)
		if !ok {
			break
		}
		res.ChainAnswers++
	}
	res.ChainPeakRSS = procStatus(0, "VmHWM")
	c.Close(websocket.StatusNormalClosure, "")
	for relay.Stats().Requests.WebSockets > 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	res.AfterRSS, _ = Settle(relay)
	return res, nil
}

// Print writes the result as a table.
func (r SocketsResult) Print(w io.Writer) {
	fmt.Fprintf(w, "Hostile WebSocket clients against the relay's bounds (frames being read: %s at most):\n\n", mb(r.Budget))
	fmt.Fprintf(w, "baseline                          RSS %s\n", mb(r.BaselineRSS))
	fmt.Fprintf(w, "%d sockets x one %s frame       peak RSS %s [baseline + budget: %s]; %d closed with 1013 (try again later)\n",
		r.Sockets, mb(int64(r.FrameBytes)), mb(r.BurstPeakRSS), mb(r.BaselineRSS+r.Budget), r.BurstRefused)
	fmt.Fprintf(w, "one socket x %d turns of %s     peak RSS %s; %d turns answered (each input one tiny item)\n",
		r.Turns, mb(int64(r.FrameBytes)), mb(r.ChainPeakRSS), r.ChainAnswers)
	fmt.Fprintf(w, "after every socket closed         RSS %s\n", mb(r.AfterRSS))
}
