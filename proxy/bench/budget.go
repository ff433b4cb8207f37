package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
)

// The budget phase of `bench proxy` (issue 49): what the relay holds for a conversation, and
// whether its memory budget keeps it bounded and fair. Three scenarios, each against a relay of
// its own (a process of its own with StartProcess, so that its peak resident memory is the
// relay's alone), each bounded in time and ended by itself:
//
//   - replay: a relay whose only account speaks Chat Completions serves Responses clients; one
//     request makes a conversation of ReplayBytes, which the relay keeps (served.go), then
//     Continuations concurrent ~100-byte requests continue it by previous_response_id, each
//     making the relay build the whole conversation again. Target: peak under 512 MB with every
//     client answered 200 or 503 with a Retry-After.
//   - uploads: Uploads connections each declare a body of UploadBytes and trickle it for
//     UploadFor, while one client sends small requests one after the other. Target: the small
//     requests' worst latency under 2 s.
//   - remake: two ChatGPT accounts; a conversation compacted on the first, which then rests;
//     RemakeTurns concurrent turns of it go to the second, which must re-make the compaction
//     from the request the relay kept. Target: one re-make, however many turns ask at once.

// BudgetResult is the budget phase's figures.
type BudgetResult struct {
	Replay  BudgetReplay  `json:"replay"`
	Uploads BudgetUploads `json:"uploads"`
	Remake  BudgetRemake  `json:"remake"`
}

// Answers counts the answers of a load: Answered the 200s (a stream: with its
// response.completed), Unavailable the 503s with a Retry-After, Failed anything else;
// Statuses each kind ("200", "503+retry-after", "503", "408", "200 incomplete", "error").
type Answers struct {
	Answered    int            `json:"answered"`
	Unavailable int            `json:"unavailable"`
	Failed      int            `json:"failed"`
	Statuses    map[string]int `json:"statuses"`
}

// BudgetReplay is the replay scenario's figures.
type BudgetReplay struct {
	ConversationBytes int64 `json:"conversationBytes"` // the body that made the conversation
	Continuations     int   `json:"continuations"`
	Answers
	// SettledRSSBytes is the relay's memory with the conversation kept, before the
	// continuations; PeakRSSBytes its peak during them.
	SettledRSSBytes int64 `json:"settledRSSBytes"`
	PeakRSSBytes    int64 `json:"peakRSSBytes"`
	// UpstreamRequests are the continuations that reached the Chat account, and
	// UpstreamMaxBytes the largest of their bodies (the conversation, replayed).
	UpstreamRequests int     `json:"upstreamRequests"`
	UpstreamMaxBytes int64   `json:"upstreamMaxBytes"`
	Seconds          float64 `json:"seconds"`
	RelayProcess     bool    `json:"relayProcess"`
}

// BudgetUploads is the slow uploads scenario's figures.
type BudgetUploads struct {
	Uploads       int     `json:"uploads"`
	DeclaredBytes int64   `json:"declaredBytes"` // each upload's Content-Length
	SentBytes     int64   `json:"sentBytes"`     // what they sent in all before giving up
	TrickleSecs   float64 `json:"trickleSeconds"`
	// UploadStatuses is what the relay answered the uploads before they gave up ("none").
	UploadStatuses map[string]int `json:"uploadStatuses"`
	// Requests small requests, one after the other while the uploads trickle, and their
	// answers and latencies.
	Requests int `json:"requests"`
	Answers
	P50Ms        float64 `json:"p50Ms"`
	MaxMs        float64 `json:"maxMs"`
	PeakRSSBytes int64   `json:"peakRSSBytes"`
	RelayProcess bool    `json:"relayProcess"`
}

// BudgetRemake is the re-make scenario's figures.
type BudgetRemake struct {
	Turns            int   `json:"turns"`
	KeptRequestBytes int64 `json:"keptRequestBytes"` // the request that made the compaction
	// Remakes are the compaction requests the serving account got during the turns.
	Remakes int `json:"remakes"`
	Answers
	SettledRSSBytes int64   `json:"settledRSSBytes"`
	PeakRSSBytes    int64   `json:"peakRSSBytes"`
	Seconds         float64 `json:"seconds"`
	RelayProcess    bool    `json:"relayProcess"`
}

// budgetTimeout bounds each request of the phase: a relay that holds a client longer has
// failed it.
const budgetTimeout = 2 * time.Minute

// RelayFor is the relay of a kind of ServeProcess in front of upstream: "relay" is Relay;
// "chat" a relay whose only account speaks Chat Completions (upstream a base URL ending in
// /v1); "compaction" one with two ChatGPT accounts at upstream, "a" then "b", that never waits
// for a resting account.
func RelayFor(kind, upstream string) (*proxy.Server, error) {
	switch kind {
	case "relay":
		return Relay(upstream), nil
	case "chat":
		relay := proxy.New(proxy.Options{Catalog: proxy.CatalogOptions{RefreshInterval: -1}})
		relay.SetAccounts([]proxy.Account{{Name: "bench-chat", Kind: proxy.KindOpenAI, API: proxy.APIChat, BaseURL: upstream,
			Credentials: proxy.Static{Token: "sk-bench-chat"}}})
		return relay, nil
	case "compaction":
		relay := proxy.New(proxy.Options{Hold: -1, Catalog: proxy.CatalogOptions{RefreshInterval: -1}})
		relay.SetAccounts([]proxy.Account{
			{Name: "a", Kind: proxy.KindChatGPT, BaseURL: upstream, Credentials: proxy.Static{Token: "bench-a", AccountID: "acct-a"}},
			{Name: "b", Kind: proxy.KindChatGPT, BaseURL: upstream, Credentials: proxy.Static{Token: "bench-b", AccountID: "acct-b"}},
		})
		return relay, nil
	}
	return nil, fmt.Errorf("no relay of kind %q", kind)
}

// budgetRelay starts a relay of kind in front of upstream for one scenario: in a process of
// its own with StartProcess, else in this one (its figures are then the whole benchmark's).
func (r *proxyRun) budgetRelay(kind, upstream string) (*Process, error) {
	if r.opt.StartProcess != nil {
		p, err := r.opt.StartProcess(kind, upstream)
		if err != nil {
			return nil, fmt.Errorf("starting the %s relay process: %w", kind, err)
		}
		return p, nil
	}
	relay, err := RelayFor(kind, upstream)
	if err != nil {
		return nil, err
	}
	u, stop, err := serveOnLoopback(relay)
	if err != nil {
		return nil, err
	}
	return &Process{URL: u, Stop: stop, Settled: func() (int64, int, error) {
		rss, n := Settle(relay)
		return rss, n, nil
	}}, nil
}

// budget runs the three scenarios.
func (r *proxyRun) budget() error {
	up, err := newBudgetUpstream()
	if err != nil {
		return err
	}
	defer up.close()
	client := &http.Client{Timeout: budgetTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	defer client.CloseIdleConnections()
	if err := r.budgetReplay(up, client); err != nil {
		return fmt.Errorf("budget, replay: %w", err)
	}
	if err := r.budgetUploads(client); err != nil {
		return fmt.Errorf("budget, uploads: %w", err)
	}
	if err := r.budgetRemake(up, client); err != nil {
		return fmt.Errorf("budget, re-make: %w", err)
	}
	return nil
}

// count adds one answer to a: its status, and whether a stream ended whole.
func (a *Answers) count(resp *http.Response, err error, wantCompleted bool) {
	if a.Statuses == nil {
		a.Statuses = map[string]int{}
	}
	kind := "error"
	switch {
	case err != nil:
	case resp.StatusCode == 200:
		kind = "200"
		b, rerr := io.ReadAll(resp.Body)
		if rerr != nil || (wantCompleted && !bytes.Contains(b, []byte("response.completed"))) {
			kind = "200 incomplete"
		}
	case resp.StatusCode == 503 && resp.Header.Get("Retry-After") != "":
		kind = "503+retry-after"
	default:
		kind = strconv.Itoa(resp.StatusCode)
	}
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	a.Statuses[kind]++
	switch kind {
	case "200":
		a.Answered++
	case "503+retry-after":
		a.Unavailable++
	default:
		a.Failed++
	}
}

// settleAndReset settles p's memory and starts its peak over from there.
func settleAndReset(p *Process) (int64, error) {
	rss, _, err := p.Settled()
	if err != nil {
		return 0, err
	}
	return rss, resetPeakRSS(p.PID)
}

// postJSON posts body to path under p.
func postJSON(client *http.Client, base, body string) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodPost, base+"/responses", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return client.Do(req)
}

// replayBody is a Responses request of about n bytes whose input is user messages of at most
// 1 MiB each: a long conversation, as a client sends it.
func replayBody(n int) string {
	item := min(1<<20, max(n/4, 1024))
	var b strings.Builder
	b.Grow(n + 4096)
	b.WriteString(`{"model":"bench-chat","instructions":"You are a helpful assistant.","input":[`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"message","role":"user","content":[{"type":"input_text","text":"`)
		b.WriteString(testkit.Text(i, min(item, max(n-b.Len(), 16))))
		b.WriteString(`"}]}`)
	}
	b.WriteString(`]}`)
	return b.String()
}

// budgetReplay runs the replay scenario.
func (r *proxyRun) budgetReplay(up *budgetUpstream, client *http.Client) error {
	res := &r.res.Budget.Replay
	res.RelayProcess = r.opt.StartProcess != nil
	p, err := r.budgetRelay("chat", up.url+"/chat/v1")
	if err != nil {
		return err
	}
	defer p.Stop()
	body := replayBody(r.opt.ReplayBytes)
	res.ConversationBytes = int64(len(body))
	resp, err := postJSON(client, p.URL, body)
	if err != nil {
		return err
	}
	first, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var made struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(first, &made) != nil || made.ID == "" {
		return fmt.Errorf("the conversation's first request: status %d: %.300s", resp.StatusCode, first)
	}
	body = ""
	if res.SettledRSSBytes, err = settleAndReset(p); err != nil {
		return err
	}
	before := up.chatCount()
	cont := `{"model":"bench-chat","previous_response_id":` + strconv.Quote(made.ID) + `,"input":"Go on with the next step, please."}`
	res.Continuations = r.opt.Continuations
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range r.opt.Continuations {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := postJSON(client, p.URL, cont)
			mu.Lock()
			defer mu.Unlock()
			res.count(resp, err, false)
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	res.Seconds = time.Since(t0).Seconds()
	res.PeakRSSBytes = procStatus(p.PID, "VmHWM")
	n, maxBytes := up.chatSince(before)
	res.UpstreamRequests, res.UpstreamMaxBytes = n, maxBytes
	client.CloseIdleConnections()
	return nil
}

// budgetUploads runs the slow uploads scenario.
func (r *proxyRun) budgetUploads(client *http.Client) error {
	res := &r.res.Budget.Uploads
	res.RelayProcess = r.opt.StartProcess != nil
	p, err := r.budgetRelay("relay", r.directURL)
	if err != nil {
		return err
	}
	defer p.Stop()
	if err := drain(postJSON(client, p.URL, smallBody)); err != nil { // its catalog, its connections
		return fmt.Errorf("warming up: %w", err)
	}
	if _, err := settleAndReset(p); err != nil {
		return err
	}
	u, err := url.Parse(p.URL)
	if err != nil {
		return err
	}
	res.Uploads, res.DeclaredBytes = r.opt.Uploads, int64(r.opt.UploadBytes)
	res.UploadStatuses = map[string]int{}
	deadline := time.Now().Add(r.opt.UploadFor)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range r.opt.Uploads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, sent := trickle(u.Host, r.opt.UploadBytes, deadline)
			mu.Lock()
			defer mu.Unlock()
			res.UploadStatuses[status]++
			res.SentBytes += sent
		}()
	}
	// The uploads' heads arrive first: the small requests come while they trickle.
	time.Sleep(min(r.opt.UploadFor/4, 500*time.Millisecond))
	small := &http.Client{Timeout: r.opt.UploadFor + 45*time.Second, Transport: &http.Transport{DisableCompression: true}}
	defer small.CloseIdleConnections()
	var lat []float64
	for time.Now().Before(deadline) || len(lat) == 0 {
		t0 := time.Now()
		resp, err := postJSON(small, p.URL, smallBody)
		res.count(resp, err, false)
		lat = append(lat, ms(time.Since(t0)))
		time.Sleep(smallEvery) // a client's pace, not a flood
	}
	t0 := time.Now()
	wg.Wait()
	res.TrickleSecs = r.opt.UploadFor.Seconds() + time.Since(t0).Seconds()
	res.Requests = len(lat)
	res.P50Ms, res.MaxMs = quantile(lat, 0.5), quantile(lat, 1)
	res.PeakRSSBytes = procStatus(p.PID, "VmHWM")
	return nil
}

// smallEvery is the pause between two small requests of the uploads scenario.
const smallEvery = 20 * time.Millisecond

// trickleChunk and trickleEvery are a slow upload's pace: 20 KB/s, well within the relay's
// stall watch (a byte every 30 s).
const (
	trickleChunk = 4 << 10
	trickleEvery = 200 * time.Millisecond
)

// trickle opens a connection to host, declares a Responses body of size bytes and sends it
// slowly until deadline, then gives up (closes the connection). It returns what the relay
// answered meanwhile ("none": nothing) and the bytes it sent.
func trickle(host string, size int, deadline time.Time) (status string, sent int64) {
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		return "error", 0
	}
	defer conn.Close()
	answered := make(chan string, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answered <- "none"
			return
		}
		resp.Body.Close()
		s := strconv.Itoa(resp.StatusCode)
		if resp.StatusCode == 503 && resp.Header.Get("Retry-After") != "" {
			s = "503+retry-after"
		}
		answered <- s
	}()
	conn.SetWriteDeadline(deadline.Add(time.Second))
	head := `{"model":"bench-small","stream":false,"input":"`
	fmt.Fprintf(conn, "POST /v1/responses HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", host, size, head)
	sent = int64(len(head))
	chunk := bytes.Repeat([]byte("a"), trickleChunk)
	tick := time.NewTicker(trickleEvery)
	defer tick.Stop()
loop:
	for time.Now().Before(deadline) && sent+int64(len(chunk)) < int64(size) {
		select {
		case s := <-answered:
			return s, sent
		case <-tick.C:
		}
		n, err := conn.Write(chunk)
		sent += int64(n)
		if err != nil {
			break loop
		}
	}
	conn.Close()
	return <-answered, sent
}

// The re-make scenario's conversation: the user's message, the compaction trigger, and the
// turn that follows the compaction.
const (
	remakeUser = `{"type":"message","role":"user","content":[{"type":"input_text","text":"run the tests and tell me what failed"}]}`
	remakeAsks = `{"type":"message","role":"user","content":[{"type":"input_text","text":"and what did the tests say?"}]}`
)

func remakeBody(items ...string) string {
	return `{"model":"gpt-5-codex","stream":true,"store":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"bench-remake","input":[` +
		strings.Join(items, ",") + `]}`
}

// budgetRemake runs the re-make scenario.
func (r *proxyRun) budgetRemake(up *budgetUpstream, client *http.Client) error {
	res := &r.res.Budget.Remake
	res.RelayProcess = r.opt.StartProcess != nil
	up.aRests.Store(false)
	p, err := r.budgetRelay("compaction", up.url+"/codex")
	if err != nil {
		return err
	}
	defer p.Stop()
	// The conversation so far, the output of a tool, compacted on a.
	history := `{"type":"function_call_output","call_id":"call_1","output":"` + testkit.Text(49, max(r.opt.RemakeBytes-512, 16)) + `"}`
	body := remakeBody(remakeUser, `{"type":"function_call","call_id":"call_1","name":"shell","arguments":"{}"}`, history, `{"type":"compaction_trigger"}`)
	history = ""
	res.KeptRequestBytes = int64(len(body))
	resp, err := postJSON(client, p.URL, body)
	if err != nil {
		return err
	}
	cmp, err := compactionOf(resp)
	if err != nil {
		return fmt.Errorf("the compaction on a: %w", err)
	}
	// a rests from now on: the relay learns it from another conversation's request, which b
	// serves.
	up.aRests.Store(true)
	if err := drain(postJSON(client, p.URL, `{"model":"gpt-5-codex","stream":true,"store":false,"prompt_cache_key":"bench-rest","input":"hello"}`)); err != nil {
		return fmt.Errorf("a request while a rests: %w", err)
	}
	if res.SettledRSSBytes, err = settleAndReset(p); err != nil {
		return err
	}
	before := up.remakes.Load()
	turn := remakeBody(remakeUser, cmp, remakeAsks)
	res.Turns = r.opt.RemakeTurns
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range r.opt.RemakeTurns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := postJSON(client, p.URL, turn)
			mu.Lock()
			defer mu.Unlock()
			res.count(resp, err, true)
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	res.Seconds = time.Since(t0).Seconds()
	res.PeakRSSBytes = procStatus(p.PID, "VmHWM")
	res.Remakes = int(up.remakes.Load() - before)
	client.CloseIdleConnections()
	return nil
}

// compactionOf reads a stream's compaction item.
func compactionOf(resp *http.Response) (string, error) {
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("status %d: %.300s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		var ev struct {
			Type string          `json:"type"`
			Item json.RawMessage `json:"item"`
		}
		if json.Unmarshal(data, &ev) == nil && ev.Type == "response.output_item.done" && bytes.Contains(ev.Item, []byte(`"compaction"`)) {
			io.Copy(io.Discard, resp.Body)
			return string(ev.Item), nil
		}
	}
	return "", fmt.Errorf("no compaction item in the answer (%v)", sc.Err())
}

// budgetUpstream is the budget phase's fake upstream: a Chat Completions account under /chat/v1
// and two ChatGPT accounts under /codex (told apart by their tokens: bench-a, bench-b) that
// compact as the Codex backend does (compaction v2), each refusing what the other sealed.
type budgetUpstream struct {
	srv *http.Server
	url string
	// The Chat account's requests and the largest of their bodies.
	mu           sync.Mutex
	chatRequests []int64
	// aRests makes a answer 429 usage_limit_reached; remakes counts the compaction requests b
	// got.
	aRests  atomic.Bool
	remakes atomic.Int64
	seq     atomic.Int64
}

func newBudgetUpstream() (*budgetUpstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &budgetUpstream{url: "http://" + ln.Addr().String()}
	u.srv = &http.Server{Handler: http.HandlerFunc(u.serve)}
	go u.srv.Serve(ln)
	return u, nil
}

func (u *budgetUpstream) close() { u.srv.Close() }

func (u *budgetUpstream) chatCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.chatRequests)
}

// chatSince is the Chat account's requests after the first n, and the largest of their bodies.
func (u *budgetUpstream) chatSince(n int) (int, int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	var most int64
	for _, b := range u.chatRequests[n:] {
		most = max(most, b)
	}
	return len(u.chatRequests) - n, most
}

func (u *budgetUpstream) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/chat/") && strings.HasSuffix(r.URL.Path, "/models"):
		io.WriteString(w, `{"object":"list","data":[{"id":"bench-chat","object":"model","owned_by":"bench"}]}`)
	case r.Method == http.MethodPost && r.URL.Path == "/chat/v1/chat/completions":
		u.chat(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/codex/responses":
		u.codex(w, r)
	default:
		io.Copy(io.Discard, r.Body)
		http.NotFound(w, r) // a usage read, a model list: not this fake's
	}
}

// chat answers a Chat Completions request, whole or streamed as it asks, having read its body
// without keeping it.
func (u *budgetUpstream) chat(w http.ResponseWriter, r *http.Request) {
	var n int64
	stream := false
	buf := make([]byte, 64<<10)
	var tail []byte
	for {
		m, err := r.Body.Read(buf)
		if m > 0 {
			n += int64(m)
			if !stream {
				look := append(tail, buf[:m]...)
				stream = bytes.Contains(look, []byte(`"stream":true`))
				tail = append(tail[:0], look[max(0, len(look)-16):]...)
			}
		}
		if err != nil {
			break
		}
	}
	u.mu.Lock()
	u.chatRequests = append(u.chatRequests, n)
	u.mu.Unlock()
	id := "chatcmpl-bench-" + strconv.FormatInt(u.seq.Add(1), 10)
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"`+id+`","object":"chat.completion","created":1764460800,"model":"bench-chat","choices":[{"index":0,"message":{"role":"assistant","content":"Done: the next step is written."},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":8,"total_tokens":1008}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta, finish string) {
		io.WriteString(w, `data: {"id":"`+id+`","object":"chat.completion.chunk","created":1764460800,"model":"bench-chat","choices":[{"index":0,"delta":`+delta+`,"finish_reason":`+finish+`}]}`+"\n\n")
	}
	chunk(`{"role":"assistant","content":"Done: the next step is written."}`, "null")
	chunk(`{}`, `"stop"`)
	io.WriteString(w, "data: [DONE]\n\n")
}

// codex answers a ChatGPT account's Responses request: a compaction request (its input ends
// with the trigger) with the account's compaction, any other with a message; content the other
// account sealed with 400 invalid_encrypted_content; a's requests with 429 while a rests.
func (u *budgetUpstream) codex(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := "a"
	if r.Header.Get("Authorization") == "Bearer bench-b" {
		key = "b"
	}
	other := "a"
	if key == "a" {
		other = "b"
	}
	if key == "a" && u.aRests.Load() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"The usage limit has been reached","resets_at":4102444800}}`)
		return
	}
	if bytes.Contains(body, []byte("gAAAABbench-"+other)) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"invalid_encrypted_content","param":null,"message":"The encrypted content gAAAABbe...= could not be verified."}}`)
		return
	}
	n := u.seq.Add(1)
	id := "resp_" + key + "_" + strconv.FormatInt(n, 10)
	item := `{"type":"message","id":"msg_` + id + `","status":"completed","role":"assistant","content":[{"type":"output_text","text":"The tests passed.","annotations":[]}]}`
	if bytes.Contains(body, []byte(`"compaction_trigger"`)) {
		if key == "b" {
			u.remakes.Add(1)
		}
		item = `{"type":"compaction","id":"cmp_` + id + `","encrypted_content":"gAAAABbench-` + key + `-cmp-` + strconv.FormatInt(n, 10) + `"}`
	}
	resp := func(status, output string) string {
		return `{"id":"` + id + `","object":"response","created_at":1764460800,"status":"` + status + `","model":"gpt-5-codex","output":` + output + `}`
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, "event: response.created\ndata: "+`{"type":"response.created","sequence_number":0,"response":`+resp("in_progress", "[]")+"}\n\n")
	io.WriteString(w, "event: response.output_item.done\ndata: "+`{"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":`+item+"}\n\n")
	io.WriteString(w, "event: response.completed\ndata: "+`{"type":"response.completed","sequence_number":2,"response":`+resp("completed", "["+item+"]")+"}\n\n")
}
