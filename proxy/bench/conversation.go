package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
)

// The conversation phase of `bench proxy`: one Codex-like conversation of Turns turns whose
// history grows to about 1.2 MB, played four ways against the same fake upstream (which speaks
// HTTP SSE and WebSocket): over HTTP directly and through the relay, over WebSocket directly
// and through the relay. Each turn the client adds a user message and a tool output (about
// 45 KB) and the upstream answers with an output item (about 15 KB). Over HTTP the client
// sends the whole history each turn; over WebSocket only the new items after
// previous_response_id. The bytes come from the relay's traces (clientBytes, upstreamBytes);
// the added time is the relay's turn time minus the direct turn time of the same transport,
// turn by turn, the four played in alternation so that a drift of the machine moves them
// together.

// ConversationTurn is one turn's figures.
type ConversationTurn struct {
	Turn int `json:"turn"`
	// Bytes from the client to the relay, and from the relay to the upstream, per transport.
	HTTPClientBytes   int64 `json:"httpClientBytes"`
	HTTPUpstreamBytes int64 `json:"httpUpstreamBytes"`
	WSClientBytes     int64 `json:"wsClientBytes"`
	WSUpstreamBytes   int64 `json:"wsUpstreamBytes"`
	// The relay's added time per transport (median over the rounds).
	HTTPAddedMs float64 `json:"httpAddedMs"`
	WSAddedMs   float64 `json:"wsAddedMs"`
}

// ConversationResult is the conversation phase's result.
type ConversationResult struct {
	Turns        int                `json:"turns"`
	Rounds       int                `json:"rounds"`
	HistoryBytes int64              `json:"historyBytes"` // the last HTTP turn's body
	PerTurn      []ConversationTurn `json:"perTurn"`
	// Over the last five turns: the WebSocket upload to the upstream as a share of HTTP's
	// (target: at most 5%), and the mean added time per turn of each transport.
	LastUploadRatio float64 `json:"lastUploadRatio"`
	LastHTTPAddedMs float64 `json:"lastHttpAddedMs"`
	LastWSAddedMs   float64 `json:"lastWsAddedMs"`
}

// Conversation runs the conversation phase of Proxy alone.
func Conversation(turns, rounds int) (ConversationResult, error) {
	opt := ProxyOptions{ConversationTurns: turns, ConversationRounds: rounds}
	opt.defaults()
	var res ProxyResult
	r := &proxyRun{opt: opt, res: &res, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}}}
	err := r.conversation()
	return res.Conversation, err
}

// conversation plays the conversation Rounds times each way.
func (r *proxyRun) conversation() error {
	up, err := newTurnUpstream()
	if err != nil {
		return err
	}
	defer up.close()
	relay := proxy.New(proxy.Options{Catalog: proxy.CatalogOptions{RefreshInterval: -1}})
	relay.SetAccounts([]proxy.Account{{Name: "bench", Kind: proxy.KindOpenAI, BaseURL: up.url + "/v1", Credentials: proxy.Static{Token: "sk-bench"}}})
	relayURL, stop, err := serveOnLoopback(relay)
	if err != nil {
		return err
	}
	defer stop()

	turns, rounds := r.opt.ConversationTurns, r.opt.ConversationRounds
	res := &r.res.Conversation
	res.Turns, res.Rounds = turns, rounds
	res.PerTurn = make([]ConversationTurn, turns)
	added := make([][2][]float64, turns) // [turn][http, ws] samples
	for round := 0; round < rounds; round++ {
		players := []*player{
			{base: up.url + "/v1", ws: false}, {base: relayURL, ws: false, relay: relay},
			{base: up.url + "/v1", ws: true}, {base: relayURL, ws: true, relay: relay},
		}
		for _, p := range players {
			p.client = r.client
		}
		for t := 0; t < turns; t++ {
			newItems := turnItems(round, t)
			var ms [4]float64
			for i := range players {
				p := players[(i+t)%4]
				d, err := p.turn(newItems)
				if err != nil {
					return fmt.Errorf("conversation turn %d (%s): %w", t+1, p.name(), err)
				}
				ms[(i+t)%4] = d
			}
			added[t][0] = append(added[t][0], ms[1]-ms[0])
			added[t][1] = append(added[t][1], ms[3]-ms[2])
			pt := &res.PerTurn[t]
			pt.Turn = t + 1
			pt.HTTPClientBytes, pt.HTTPUpstreamBytes = players[1].clientBytes, players[1].upstreamBytes
			pt.WSClientBytes, pt.WSUpstreamBytes = players[3].clientBytes, players[3].upstreamBytes
			res.HistoryBytes = players[1].clientBytes
		}
		for _, p := range players {
			p.close()
		}
	}
	var httpUp, wsUp int64
	var httpAdd, wsAdd float64
	last := min(5, turns)
	for t := range turns {
		pt := &res.PerTurn[t]
		pt.HTTPAddedMs, pt.WSAddedMs = quantile(added[t][0], 0.5), quantile(added[t][1], 0.5)
		if t >= turns-last {
			httpUp += pt.HTTPUpstreamBytes
			wsUp += pt.WSUpstreamBytes
			httpAdd += pt.HTTPAddedMs
			wsAdd += pt.WSAddedMs
		}
	}
	if httpUp > 0 {
		res.LastUploadRatio = float64(wsUp) / float64(httpUp)
	}
	res.LastHTTPAddedMs, res.LastWSAddedMs = httpAdd/float64(last), wsAdd/float64(last)
	return nil
}

// turnItems are the items the client adds at a turn: a user message and a tool output.
func turnItems(round, t int) []json.RawMessage {
	seed := round*1000 + t
	user, _ := json.Marshal(map[string]any{"type": "message", "role": "user",
		"content": []map[string]string{{"type": "input_text", "text": testkit.Text(seed, 3000)}}})
	call := "call_" + strconv.Itoa(seed)
	fc, _ := json.Marshal(map[string]any{"type": "function_call", "name": "shell", "call_id": call, "arguments": `{"command":["rg","-n","retry"]}`})
	out, _ := json.Marshal(map[string]any{"type": "function_call_output", "call_id": call, "output": testkit.Text(seed+1, 42000)})
	return []json.RawMessage{user, fc, out}
}

// player is one of the four ways the conversation is played.
type player struct {
	base   string
	ws     bool
	relay  *proxy.Server // set when base is the relay: its traces give the bytes
	client *http.Client
	conn   *websocket.Conn
	// history is the conversation so far (HTTP); prev the last response's id (WebSocket).
	history []json.RawMessage
	prev    string
	// The last turn's bytes, from the relay's trace.
	clientBytes, upstreamBytes int64
}

func (p *player) name() string {
	n := "direct"
	if p.relay != nil {
		n = "relay"
	}
	if p.ws {
		return n + " websocket"
	}
	return n + " http"
}

const convHead = `{"type":"response.create","model":"gpt-5-codex","instructions":"You are Codex, a coding agent.","store":false,"tool_choice":"auto","parallel_tool_calls":false`

// turn plays one turn and returns its time in milliseconds.
func (p *player) turn(items []json.RawMessage) (float64, error) {
	var before int
	if p.relay != nil {
		before = len(p.relay.Traces(0))
	}
	t0 := time.Now()
	var output []json.RawMessage
	var id string
	var err error
	if p.ws {
		id, err = p.wsTurn(items)
	} else {
		id, output, err = p.httpTurn(items)
	}
	d := float64(time.Since(t0).Nanoseconds()) / 1e6
	if err != nil {
		return 0, err
	}
	if !p.ws {
		p.history = append(append(p.history, items...), output...)
	}
	p.prev = id
	if p.relay != nil {
		// The trace is recorded as the turn's handler returns, just after its last event.
		for deadline := time.Now().Add(5 * time.Second); len(p.relay.Traces(0)) == before; {
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("no trace for the turn")
			}
			time.Sleep(100 * time.Microsecond)
		}
		tr := p.relay.Traces(1)[0]
		if tr.Outcome != proxy.OutcomeCompleted {
			return 0, fmt.Errorf("the relay's trace says %s: %s", tr.Outcome, tr.Error)
		}
		p.clientBytes, p.upstreamBytes = tr.ClientBytes, tr.UpstreamBytes
	}
	return d, nil
}

func (p *player) httpTurn(items []json.RawMessage) (string, []json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteString(strings.Replace(convHead, `"type":"response.create",`, "", 1))
	b.WriteString(`,"stream":true,"input":[`)
	for i, it := range append(append([]json.RawMessage(nil), p.history...), items...) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteString("]}")
	req, _ := http.NewRequest(http.MethodPost, p.base+"/responses", &b)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: ")) || !bytes.Contains(line[:min(len(line), 64)], []byte("response.completed")) {
			continue
		}
		id, output, err := completedOutput(line[6:])
		io.Copy(io.Discard, resp.Body)
		return id, output, err
	}
	return "", nil, fmt.Errorf("the stream ended without response.completed: %v", sc.Err())
}

func (p *player) wsTurn(items []json.RawMessage) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if p.conn == nil {
		u := strings.Replace(p.base, "http", "ws", 1) + "/responses"
		c, _, err := websocket.Dial(ctx, u, nil)
		if err != nil {
			return "", err
		}
		c.SetReadLimit(64 << 20)
		p.conn = c
	}
	var b bytes.Buffer
	b.WriteString(convHead)
	if p.prev != "" {
		b.WriteString(`,"previous_response_id":` + strconv.Quote(p.prev))
	}
	b.WriteString(`,"input":[`)
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteString("]}")
	if err := p.conn.Write(ctx, websocket.MessageText, b.Bytes()); err != nil {
		return "", err
	}
	for {
		_, data, err := p.conn.Read(ctx)
		if err != nil {
			return "", err
		}
		head := data[:min(len(data), 64)]
		if bytes.Contains(head, []byte(`"response.completed"`)) {
			id, _, err := completedOutput(data)
			return id, err
		}
		if bytes.Contains(head, []byte(`"error"`)) || bytes.Contains(head, []byte(`"response.failed"`)) {
			return "", fmt.Errorf("the turn failed: %s", data[:min(len(data), 300)])
		}
	}
}

func (p *player) close() {
	if p.conn != nil {
		p.conn.CloseNow()
	}
}

// completedOutput reads the response id and output items of a response.completed event.
func completedOutput(data []byte) (string, []json.RawMessage, error) {
	var ev struct {
		Response struct {
			ID     string            `json:"id"`
			Output []json.RawMessage `json:"output"`
		} `json:"response"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return "", nil, err
	}
	return ev.Response.ID, ev.Response.Output, nil
}

// turnUpstream is the conversation's fake upstream: Responses over HTTP SSE and over
// WebSocket, answering each turn with a 15 KB output item. Over WebSocket it keeps the ids
// it answered per socket and refuses others, as a store:false upstream does.
type turnUpstream struct {
	srv *http.Server
	url string
	seq int64
	mu  sync.Mutex
}

func newTurnUpstream() (*turnUpstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &turnUpstream{url: "http://" + ln.Addr().String()}
	u.srv = &http.Server{Handler: http.HandlerFunc(u.serve)}
	go u.srv.Serve(ln)
	return u, nil
}

func (u *turnUpstream) close() { u.srv.Close() }

func (u *turnUpstream) nextID() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.seq++
	return "resp_c" + strconv.FormatInt(u.seq, 10)
}

// events are a turn's answer: created, a few deltas, the output item, completed.
func (u *turnUpstream) events(id string) [][]byte {
	text := strings.Repeat("The relay keeps the conversation and sends only what is new. ", 240) // ~15 KB
	item, _ := json.Marshal(map[string]any{"id": "msg_" + id, "type": "message", "status": "completed", "role": "assistant",
		"content": []map[string]any{{"type": "output_text", "text": text, "annotations": []any{}}}})
	resp := func(status, output string) string {
		return `{"id":"` + id + `","object":"response","status":"` + status + `","model":"gpt-5-codex","output":` + output + `}`
	}
	evs := [][]byte{[]byte(`{"type":"response.created","response":` + resp("in_progress", "[]") + `}`)}
	for i := 0; i < 8; i++ {
		evs = append(evs, []byte(`{"type":"response.output_text.delta","item_id":"msg_`+id+`","output_index":0,"content_index":0,"delta":"chunk of the answer "}`))
	}
	evs = append(evs, []byte(`{"type":"response.output_item.done","output_index":0,"item":`+string(item)+`}`))
	return append(evs, []byte(`{"type":"response.completed","response":`+resp("completed", "["+string(item)+"]")+`}`))
}

func (u *turnUpstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-5-codex"}]}`)
		return
	}
	if r.Method == http.MethodGet {
		u.serveSocket(w, r)
		return
	}
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range u.events(u.nextID()) {
		name := ev[len(`{"type":"`):]
		w.Write([]byte("event: "))
		w.Write(name[:bytes.IndexByte(name, '"')])
		w.Write([]byte("\ndata: "))
		w.Write(ev)
		w.Write([]byte("\n\n"))
		// Each event leaves as it is made, as a real upstream's do (and as each is a frame of
		// its own over WebSocket).
		w.(http.Flusher).Flush()
	}
}

func (u *turnUpstream) serveSocket(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(64 << 20)
	known := map[string]bool{}
	ctx := context.Background()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var f struct {
			Prev string `json:"previous_response_id"`
		}
		json.Unmarshal(data, &f)
		if f.Prev != "" && !known[f.Prev] {
			c.Write(ctx, websocket.MessageText, []byte(`{"type":"error","status":400,"error":{"type":"invalid_request_error","code":"previous_response_not_found","message":"not found"}}`))
			continue
		}
		id := u.nextID()
		known[id] = true
		for _, ev := range u.events(id) {
			if c.Write(ctx, websocket.MessageText, ev) != nil {
				return
			}
		}
	}
}
