package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
)

// upstream is an in-process fake of an OpenAI-compatible or ChatGPT backend. It records every
// request it gets and answers with handle.
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	got    []recorded
	listed int // GET .../models requests
	handle func(w http.ResponseWriter, r *http.Request, n int)
	// models answers GET .../models; nil answers 404 (no catalog: requests pass through).
	models func(w http.ResponseWriter, r *http.Request)
}

type recorded struct {
	Path   string
	Header http.Header
	Body   []byte
}

func newUpstream(t testing.TB, handle func(w http.ResponseWriter, r *http.Request, n int)) *upstream {
	t.Helper()
	u := &upstream{handle: handle}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
			u.mu.Lock()
			u.listed++
			models := u.models
			u.mu.Unlock()
			if models == nil {
				http.NotFound(w, r)
				return
			}
			models(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		n := len(u.got)
		u.got = append(u.got, recorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		u.mu.Unlock()
		u.handle(w, r.WithContext(context.WithValue(r.Context(), bodyKey{}, body)), n)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) requests() []recorded {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]recorded(nil), u.got...)
}

// textEvents is a complete, well-formed Responses event stream answering text.
func textEvents(id, model, text string) []string {
	resp := func(status string, output string) string {
		return fmt.Sprintf(`{"id":%q,"object":"response","created_at":1764460800,"status":%q,"model":%q,"output":%s,"usage":%s}`,
			id, status, model, output, map[bool]string{true: `{"input_tokens":12,"output_tokens":3,"total_tokens":15,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}`, false: "null"}[status == "completed"])
	}
	item := fmt.Sprintf(`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[]}]}`, text)
	half := len(text) / 2
	evs := []struct{ name, data string }{
		{"response.created", `{"type":"response.created","sequence_number":0,"response":` + resp("in_progress", "[]") + `}`},
		{"response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":` + resp("in_progress", "[]") + `}`},
		{"response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`},
		{"response.content_part.added", `{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`},
		{"response.output_text.delta", fmt.Sprintf(`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":%q,"logprobs":[]}`, text[:half])},
		{"response.output_text.delta", fmt.Sprintf(`{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":%q,"logprobs":[]}`, text[half:])},
		{"response.output_text.done", fmt.Sprintf(`{"type":"response.output_text.done","sequence_number":6,"item_id":"msg_1","output_index":0,"content_index":0,"text":%q,"logprobs":[]}`, text)},
		{"response.content_part.done", fmt.Sprintf(`{"type":"response.content_part.done","sequence_number":7,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":%q,"annotations":[]}}`, text)},
		{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":` + item + `}`},
		{"response.completed", `{"type":"response.completed","sequence_number":9,"response":` + resp("completed", "["+item+"]") + `}`},
	}
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = "event: " + e.name + "\ndata: " + e.data + "\n\n"
	}
	return out
}

// completedJSON is the final response object of textEvents, as a non-streamed answer.
func completedJSON(id, model, text string) string {
	evs := textEvents(id, model, text)
	last := evs[len(evs)-1]
	data := strings.TrimSuffix(last[strings.Index(last, "data: ")+6:], "\n\n")
	var v struct {
		Response json.RawMessage `json:"response"`
	}
	json.Unmarshal([]byte(data), &v)
	return string(v.Response)
}

// writeEvents streams events, flushing each.
func writeEvents(w http.ResponseWriter, events []string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	for _, e := range events {
		io.WriteString(w, e)
		w.(http.Flusher).Flush()
	}
}

// answerText is an upstream handler that answers like the OpenAI API: a stream when the
// body asks for one, else JSON.
func answerText(text string) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		var body struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		u := readRecorded(r)
		json.Unmarshal(u, &body)
		id := fmt.Sprintf("resp_%d", n)
		if body.Stream {
			writeEvents(w, textEvents(id, body.Model, text))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, completedJSON(id, body.Model, text))
	}
}

// readRecorded returns the body the upstream recorded for r (the test server already read it).
func readRecorded(r *http.Request) []byte {
	return r.Context().Value(bodyKey{}).([]byte)
}

type bodyKey struct{}

// relay is a proxy.Server behind a loopback test server.
type relay struct {
	*proxy.Server
	URL string
	ts  *httptest.Server
}

func newRelay(t testing.TB, opt proxy.Options, accounts ...proxy.Account) *relay {
	t.Helper()
	if opt.LocalAPI == nil { // the /relay/* routes, as an embedder serves them
		opt.LocalAPI = func(s *proxy.Server) http.Handler { return localapi.Handler(localapi.ServerBackend(s)) }
	}
	s := proxy.New(opt)
	s.SetAccounts(accounts)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return &relay{Server: s, URL: ts.URL, ts: ts}
}

func openaiAccount(name string, u *upstream) proxy.Account {
	return proxy.Account{Name: name, Kind: proxy.KindOpenAI, BaseURL: u.URL + "/v1", Credentials: proxy.Static{Token: "sk-test-" + name}}
}

func chatgptAccount(name string, u *upstream) proxy.Account {
	return proxy.Account{Name: name, Kind: proxy.KindChatGPT, BaseURL: u.URL + "/backend-api/codex",
		Credentials: proxy.Static{Token: "access-" + name, AccountID: "acct-" + name}}
}

// sdk is the official OpenAI Go client pointed at the relay, with the SDK's own retries off.
func (r *relay) sdk(opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(r.URL + "/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0),
	}, opts...)...)
}

// post sends a raw request to the relay.
func (r *relay) post(t *testing.T, path, body string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return b
}

// apiErr decodes an OpenAI-shaped error answer.
type apiErr struct {
	Error struct {
		Message  string `json:"message"`
		Type     string `json:"type"`
		Code     string `json:"code"`
		Param    string `json:"param"`
		ResetsAt int64  `json:"resets_at"`
	} `json:"error"`
}

func decodeErr(t *testing.T, resp *http.Response) apiErr {
	t.Helper()
	var e apiErr
	b := readAll(t, resp)
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Message == "" {
		t.Fatalf("answer is not an OpenAI error: %s", b)
	}
	return e
}

// eventually waits for cond (a liveness bound, not a speed assertion).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// clock is a controllable time source for proxy.Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// account returns the stats of the named account.
func (r *relay) account(t *testing.T, name string) proxy.AccountStats {
	t.Helper()
	for _, a := range r.Stats().Accounts {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no account %q", name)
	return proxy.AccountStats{}
}

// lastTrace waits for the request's trace (it is recorded as the handler returns).
func (r *relay) lastTrace(t *testing.T, n int) proxy.Trace {
	t.Helper()
	eventually(t, "the trace", func() bool { return len(r.Traces(0)) >= n && r.Stats().Requests.InFlight == 0 })
	return r.Traces(1)[0]
}

// status answers a fixed status and body.
func status(code int, body string, header ...string) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// sequence answers the n-th request with handlers[n] (the last one repeats).
func sequence(handlers ...func(w http.ResponseWriter, r *http.Request, n int)) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		handlers[min(n, len(handlers)-1)](w, r, n)
	}
}
