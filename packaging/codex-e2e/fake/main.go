// Command fake is the upstream of `make codex-e2e`: a fake ChatGPT backend for two accounts, A
// and B, on two loopback ports, under /backend-api (Codex responses at /backend-api/codex). It
// behaves the way the real backend does where the relay must get it right:
//
//   - GET /backend-api/codex/models?client_version=V: the catalog entries of gpt-5.6-sol (a
//     Responses Lite model) and gpt-5.5 exactly as Codex 0.171 bundles them (models.json);
//   - GET /backend-api/wham/usage: A's one window (a weekly-only plan: 12% of the week, 100%
//     once A is at its limit), B's two (34% of five hours, 17% of the week) and B's own limit
//     of GPT-5.3-Codex-Spark (50% of five hours); and, for a sign-in of neither account (the
//     user Codex itself is signed in as, whose calls the relay passes on to A's port), that
//     user's own answer: plan plus, a credits balance of 12.50, 3 banked resets, and windows
//     (80% of five hours, 40% of the week) the relay replaces with the pool's;
//   - POST /backend-api/codex/responses (SSE) and GET with Upgrade (WebSocket, one JSON event per
//     text frame; later frames carry previous_response_id and only the new items; generate:false
//     warm-ups are answered with an empty response). With -refuse-websocket the upgrade is
//     answered 404, so the relay serves the turn over HTTP.
//
// What it refuses or degrades: a request whose context has an additional_tools item but no Lite
// marker (the header x-openai-internal-codex-responses-lite: true over HTTP, the client_metadata
// key ws_request_header_x_openai_internal_codex_responses_lite: "true" in a frame) is answered as
// a model without tools would answer (a message saying it has no shell tool); the marker on a
// model that is not Lite is refused 400; each account seals its reasoning (encrypted_content
// gAAAABA... for A, gAAAABB... for B) and refuses any foreign sealed content anywhere in the
// input with 400 invalid_request_body; a tool call output without its call is refused 400; a
// credential of the other account is refused 401. It issues a turn state on a turn's first
// response (the x-codex-turn-state response header over HTTP, a response.metadata event over a
// socket) and notes any turn state it did not issue.
//
// Script: A answers its first real turn with its sealed reasoning and a call of the tool Codex
// offered (code mode's custom tool functions/exec, JavaScript that runs `echo hi`), then 429
// usage_limit_reached (resets_at a day ahead) to every later request; B answers with its sealed
// reasoning and the message "done".
//
// Every request (headers, body) and every WebSocket frame is logged to LOGDIR as
// <account>-<seq>-headers.txt / -body.json / -ws-frame.json, and each Responses request's
// verdict as one JSON line of LOGDIR/requests.jsonl (what run.sh checks).
//
// With -web, A's tool call is code mode's script that calls web.run and image_gen.imagegen
// (responses.WebScript), and both accounts serve what Codex then posts itself:
// POST /backend-api/codex/alpha/search ({"output": "search results from <account>"}) and
// /images/generations and /images/edits (one PNG); A answers them 429 usage_limit_reached once
// it is at its limit (after its first turn), like its Responses requests. Each is recorded as
// one JSON line of LOGDIR/backend.jsonl.
//
// With -slow, every turn streams a word every 200 ms until the relay ends it (serveSlow).
//
// With -compact, the backend compacts as the ChatGPT backend does (compaction v2,
// proxy/testdata/codex-0.171/compact-*): A's tool call runs `echo FACT-7Q2` and its answer
// reports 1240 tokens (over the limit run.sh gives Codex, 1000), so Codex compacts before it
// sends the tool's output on; a request whose input ends with {"type":"compaction_trigger"} is
// answered with one compaction item sealed to the account, which carries (readable to that
// account alone) the FACT- words the history held. A answers its compaction, then 429 to every
// later request. B's answers say what it knows: "done: the tool printed FACT-..." from the
// plain input and its own compactions, or "done: I do not know what the tool printed"
// (assistant messages are never read: what an answer knows comes from tool outputs and the
// account's own compactions alone).
//
// With -limit-on-demand, A reaches its limit only when run.sh says so (POST /e2e/limit on A's
// port; A's usage then reads 100% of its week): until then A serves every request, calling the
// tool only while the conversation has neither a tool output nor a compaction, and answering
// afterwards as B does. From then on it answers 429 usage_limit_reached to every request.
//
//	fake [-refuse-websocket] [-web] [-slow] [-compact] [-limit-on-demand] PORTA PORTB LOGDIR
package main

import (
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/codexrelay/codexrelay/packaging/codex-e2e/internal/responses"
)

//go:embed models.json
var catalog []byte

const (
	liteHeader  = "X-Openai-Internal-Codex-Responses-Lite"
	liteMetaKey = "ws_request_header_x_openai_internal_codex_responses_lite"
	stateHeader = "X-Codex-Turn-State"
	stateKey    = "x-codex-turn-state" // in a frame's client_metadata
)

var (
	logDir   string
	refuseWS bool
	web      bool                // A's tool call is responses.WebScript
	slow     bool                // turns stream a word every 200 ms (serveSlow)
	compact  bool                // compaction v2, and a fact to remember (-compact)
	onDemand bool                // A reaches its limit at POST /e2e/limit (-limit-on-demand)
	liteOf   = map[string]bool{} // model slug -> use_responses_lite
	jsonlMu  sync.Mutex
)

type account struct {
	name, id string // "A", its ChatGPT account id
	mu       sync.Mutex
	seq      int             // records logged
	real     int             // real (not warm-up) Responses requests answered
	resps    int             // response ids issued
	states   map[string]bool // turn states issued
	limited  bool            // at its limit since POST /e2e/limit (-limit-on-demand)
}

func (a *account) prefix() string { return "gAAAAB" + a.name }

func (a *account) next() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	return a.seq
}

func (a *account) logHTTP(r *http.Request, body []byte) int {
	k := a.next()
	base := filepath.Join(logDir, fmt.Sprintf("%s-%03d", a.name, k))
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s %s %s\n", r.Method, r.URL.RequestURI(), r.Proto)
	keys := make([]string, 0, len(r.Header))
	for h := range r.Header {
		keys = append(keys, h)
	}
	sort.Strings(keys)
	for _, h := range keys {
		for _, v := range r.Header[h] {
			if h == "Authorization" && len(v) > 24 {
				v = v[:24] + "..."
			}
			fmt.Fprintf(&sb, "%s: %s\n", h, v)
		}
	}
	os.WriteFile(base+"-headers.txt", []byte(sb.String()), 0o644)
	if len(body) > 0 {
		os.WriteFile(base+"-body.json", body, 0o644)
	}
	log.Printf("[%s] #%d %s %s (%d bytes)", a.name, k, r.Method, r.URL.RequestURI(), len(body))
	return k
}

func (a *account) logFrame(data []byte) int {
	k := a.next()
	os.WriteFile(filepath.Join(logDir, fmt.Sprintf("%s-%03d-ws-frame.json", a.name, k)), data, 0o644)
	log.Printf("[%s] #%d ws frame (%d bytes)", a.name, k, len(data))
	return k
}

// verdict is one Responses request as requests.jsonl records it.
type verdict struct {
	Account          string `json:"account"`
	Seq              int    `json:"seq"`
	Transport        string `json:"transport"` // http | ws
	Model            string `json:"model"`
	Warmup           bool   `json:"warmup,omitempty"`
	Incremental      bool   `json:"incremental,omitempty"` // previous_response_id on the socket
	AdditionalTools  bool   `json:"additional_tools"`      // an additional_tools item in this request's input
	ContextTools     bool   `json:"context_tools"`         // ... or in the conversation it follows
	Marker           bool   `json:"marker"`
	TurnStateIn      string `json:"turn_state_in,omitempty"`
	ForeignTurnState bool   `json:"foreign_turn_state,omitempty"`
	ToolOutput       string `json:"tool_output,omitempty"`
	Status           int    `json:"status"`
	Answer           string `json:"answer"` // tool_call | done | no_tools | warmup | compaction | error code
	Said             string `json:"said,omitempty"`
	// Tokens is the usage's total_tokens the answer reports (0: the stream's default).
	Tokens int `json:"tokens,omitempty"`
}

func record(v verdict) {
	b, _ := json.Marshal(v)
	jsonlMu.Lock()
	defer jsonlMu.Unlock()
	f, err := os.OpenFile(filepath.Join(logDir, "requests.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		log.Print(err)
		return
	}
	defer f.Close()
	f.Write(append(b, '\n'))
	log.Printf("[%s] #%d %s: %d %s", v.Account, v.Seq, v.Transport, v.Status, v.Answer)
}

// apiErr is an error the backend answers: over HTTP the status and body, over a socket an error
// event {"type":"error","status":N,"error":{...}}.
type apiErr struct {
	status int
	body   map[string]any // the "error" object
}

func errOf(status int, typ, code, msg string) *apiErr {
	e := map[string]any{"type": typ, "message": msg}
	if code != "" {
		e["code"] = code
	} else {
		e["code"] = nil
	}
	return &apiErr{status, e}
}

// turn is what one Responses request asks, whichever transport carried it.
type turn struct {
	req       map[string]any
	marker    bool
	turnState string
	context   []any // the conversation: what previous_response_id names, then the input
	transport string
	seq       int
}

// answer runs the script for one request: the items of the response, or an error.
func (a *account) answer(t *turn, v *verdict) (id string, items []map[string]any, newState string, e *apiErr) {
	req := t.req
	model, _ := req["model"].(string)
	input, _ := req["input"].([]any)
	v.Model = model
	v.AdditionalTools = responses.HasItem(input, "additional_tools")
	v.ContextTools = responses.HasItem(t.context, "additional_tools")
	v.Marker = t.marker
	v.TurnStateIn = t.turnState
	v.ToolOutput = toolOutputs(input)
	v.Warmup = req["generate"] == false
	a.mu.Lock()
	if t.turnState != "" && !a.states[t.turnState] {
		v.ForeignTurnState = true
		log.Printf("[%s] #%d FOREIGN turn state %q", a.name, t.seq, t.turnState)
	}
	a.mu.Unlock()
	if t.transport == "http" {
		if req["stream"] != true {
			return "", nil, "", errOf(400, "invalid_request_error", "", "Stream must be set to true")
		}
		if _, ok := req["previous_response_id"]; ok {
			return "", nil, "", errOf(400, "invalid_request_error", "previous_response_not_found", "Previous response with id '"+fmt.Sprint(req["previous_response_id"])+"' not found.")
		}
	}
	if req["store"] != false {
		return "", nil, "", errOf(400, "invalid_request_error", "", "Store must be set to false")
	}
	lite, known := liteOf[model]
	if !known {
		return "", nil, "", errOf(400, "invalid_request_error", "", fmt.Sprintf("The '%s' model is not supported when using Codex with a ChatGPT account.", model))
	}
	if t.marker && !lite {
		return "", nil, "", errOf(400, "invalid_request_error", "", "This model is not supported when using X-OpenAI-Internal-Codex-Responses-Lite")
	}
	if enc := foreign(input, a.prefix()); enc != "" {
		log.Printf("[%s] #%d REFUSED foreign sealed content %q", a.name, t.seq, enc)
		return "", nil, "", errOf(400, "invalid_request_error", "invalid_request_body", "Encrypted function output content could not be decrypted or decoded.")
	}
	if id := orphanOutput(t.context); id != "" {
		log.Printf("[%s] #%d REFUSED output of call %q without its call", a.name, t.seq, id)
		return "", nil, "", errOf(400, "invalid_request_error", "", "No tool call found for function call output with call_id "+id+".")
	}
	a.mu.Lock()
	a.resps++
	id = fmt.Sprintf("resp_%s_%d", a.name, a.resps)
	if v.Warmup {
		a.mu.Unlock()
		v.Answer = "warmup"
		return id, []map[string]any{}, "", nil // an empty output ([], not null)
	}
	a.real++
	n := a.real
	if t.turnState == "" {
		newState = fmt.Sprintf("ts-%s-%d", a.name, len(a.states)+1)
		a.states[newState] = true
	}
	a.mu.Unlock()
	limitAfter := 1
	if compact {
		limitAfter = 2 // the turn's tool call, then the compaction
		v.Tokens = 200
	}
	spent := a.name == "A" && n > limitAfter
	if onDemand {
		a.mu.Lock()
		spent = a.limited
		a.mu.Unlock()
	}
	if compact && responses.LastItemType(input) == "compaction_trigger" && !spent {
		v.Answer = "compaction"
		facts := strings.Join(a.facts(t.context), " ")
		return id, []map[string]any{{"type": "compaction", "id": fmt.Sprintf("cmp_%s_%d", a.name, n),
			"encrypted_content": a.prefix() + "-compaction-" + base64.RawURLEncoding.EncodeToString([]byte(facts))}}, newState, nil
	}
	if spent {
		e := errOf(429, "usage_limit_reached", "usage_limit_reached", "The usage limit has been reached")
		e.body["plan_type"] = "pro"
		e.body["resets_at"] = time.Now().Unix() + 86400
		e.body["resets_in_seconds"] = 86400
		return "", nil, "", e
	}
	reasoning := responses.Reasoning(fmt.Sprintf("rs_%s_%d", a.name, n), fmt.Sprintf("%s-sealed-reasoning-%d==", a.prefix(), n))
	switch {
	case v.ContextTools && !t.marker:
		// Without the marker the backend ignores additional_tools: the model has no tools.
		v.Answer = "no_tools"
		return id, []map[string]any{reasoning, message(a.name, n, "I have no shell tool here, so I cannot run `echo hi`.")}, newState, nil
	case a.name == "A" && !(onDemand && (toolOutputs(t.context) != "" || responses.HasItem(t.context, "compaction"))):
		call := toolCall(t.context, a.name, n)
		v.Answer = "tool_call"
		if compact {
			v.Tokens = 1240 // over Codex's limit: it compacts
		}
		if call["type"] == "message" {
			v.Answer = "no_tools"
		}
		return id, []map[string]any{reasoning, call}, newState, nil
	}
	v.Answer = "done"
	text := "done"
	if compact {
		text = "done: I do not know what the tool printed"
		if facts := a.facts(t.context); len(facts) > 0 {
			text = "done: the tool printed " + strings.Join(facts, " ")
		}
	}
	v.Said = text
	return id, []map[string]any{reasoning, message(a.name, n, text)}, newState, nil
}

// factWord is a fact, wherever it stands (the exec tool's output is JSON inside text).
var factWord = regexp.MustCompile(`FACT-[A-Z0-9]+`)

// facts are the FACT- words the account can read in a conversation: in the tool outputs, and
// in the compactions it sealed itself.
func (a *account) facts(ctx []any) []string {
	var out []string
	add := func(s string) {
		for _, w := range factWord.FindAllString(s, -1) {
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	add(toolOutputs(ctx))
	own := a.prefix() + "-compaction-"
	for _, it := range ctx {
		m, _ := it.(map[string]any)
		if enc, _ := m["encrypted_content"].(string); m["type"] == "compaction" && strings.HasPrefix(enc, own) {
			b, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(enc, own))
			add(string(b))
		}
	}
	return out
}

// events is the stream of a response to req: its turn state, if any, as a response.metadata
// event (over a socket; HTTP sends it as a header).
func events(id string, req map[string]any, items []map[string]any, state string, tokens int) []map[string]any {
	model, _ := req["model"].(string)
	return responses.Stream{ID: id, Model: model, CreatedAt: time.Now().Unix(), ParallelToolCalls: req["parallel_tool_calls"],
		Items: items, TurnState: state, TotalTokens: tokens}.Events()
}

func message(acct string, n int, text string) map[string]any {
	return responses.Message(fmt.Sprintf("msg_%s_%d", acct, n), text)
}

// toolCall calls the tool the conversation offers: code mode's custom exec (Codex 0.171 with
// gpt-5.6-sol), or else a shell-like function.
func toolCall(ctx []any, acct string, n int) map[string]any {
	tools := responses.Offered(nil, ctx)
	var names []string
	for _, t := range tools {
		names = append(names, t.String())
	}
	log.Printf("[%s] offered tools: %s", acct, strings.Join(names, " "))
	t, ok := responses.Find(tools, []string{"exec", "exec_command", "shell_command", "shell"})
	if !ok {
		return message(acct, n, "I have no shell tool here.")
	}
	cmd := "echo hi"
	if compact {
		cmd = "echo FACT-7Q2"
	}
	args := `{"cmd":"` + cmd + `"}`
	if t.Def["type"] == "custom" {
		args = `const r = await tools.exec_command({cmd: "` + cmd + `"}); text(r);`
		if web {
			args = responses.WebScript
		}
	}
	log.Printf("[%s] calling %s/%s", acct, t.Namespace, t.Name())
	return responses.Call(fmt.Sprintf("ctc_%s_%d", acct, n), fmt.Sprintf("call_%s_%d", acct, n), t, args)
}

// foreign returns an encrypted_content anywhere in v that is not sealed by own.
func foreign(v any, own string) string {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if s, ok := x.(string); ok && (k == "encrypted_content" || strings.HasPrefix(s, "gAAAAB")) && s != "" && !strings.HasPrefix(s, own) {
				return s
			}
			if f := foreign(x, own); f != "" {
				return f
			}
		}
	case []any:
		for _, x := range t {
			if f := foreign(x, own); f != "" {
				return f
			}
		}
	}
	return ""
}

// orphanOutput returns the call_id of a tool output in ctx that follows no call of that id.
func orphanOutput(ctx []any) string {
	calls := map[string]bool{}
	for _, it := range ctx {
		m, _ := it.(map[string]any)
		typ, _ := m["type"].(string)
		id, _ := m["call_id"].(string)
		switch {
		case strings.HasSuffix(typ, "_call_output"):
			if !calls[id] {
				return id
			}
		case strings.HasSuffix(typ, "_call"):
			calls[id] = true
		}
	}
	return ""
}

// toolOutputs is the text of the tool outputs of input.
func toolOutputs(input []any) string {
	var sb strings.Builder
	for _, it := range input {
		m, _ := it.(map[string]any)
		if typ, _ := m["type"].(string); !strings.HasSuffix(typ, "_call_output") {
			continue
		}
		switch o := m["output"].(type) {
		case string:
			sb.WriteString(o)
		case []any:
			for _, p := range o {
				if pm, ok := p.(map[string]any); ok {
					s, _ := pm["text"].(string)
					sb.WriteString(s)
				}
			}
		}
	}
	return sb.String()
}

// authorized checks the credential and the account id header against the account.
func (a *account) authorized(h http.Header) bool {
	if h.Get("Chatgpt-Account-Id") != a.id {
		return false
	}
	tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var claims struct {
		Auth struct {
			AccountID string `json:"chatgpt_account_id"`
		} `json:"https://api.openai.com/auth"`
	}
	return json.Unmarshal(b, &claims) == nil && claims.Auth.AccountID == a.id
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func decode(r *http.Request) ([]byte, error) {
	wire, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	return responses.Decode(r.Header.Get("Content-Encoding"), wire)
}

func (a *account) handler(w http.ResponseWriter, r *http.Request) {
	body, err := decode(r)
	k := a.logHTTP(r, body)
	if err != nil {
		writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "cannot decode the body: " + err.Error(), "type": "invalid_request_error"}})
		return
	}
	p := r.URL.Path
	if r.Method == "POST" && p == "/oauth/token" {
		// No refresh is expected (the tokens expire in 2100): refuse, and say so in the log.
		log.Printf("[%s] #%d UNEXPECTED token refresh", a.name, k)
		writeJSON(w, 400, map[string]any{"error": "invalid_grant", "error_description": "the e2e fake refreshes no token"})
		return
	}
	if onDemand && a.name == "A" && r.Method == "POST" && p == "/e2e/limit" {
		a.mu.Lock()
		a.limited = true
		a.mu.Unlock()
		log.Printf("[%s] #%d at its limit from now on", a.name, k)
		writeJSON(w, 200, map[string]any{"limited": true})
		return
	}
	if r.Method == "GET" && p == "/backend-api/wham/usage" && !a.authorized(r.Header) && r.Header.Get("Chatgpt-Account-Id") != "" {
		now := time.Now().Unix()
		writeJSON(w, 200, map[string]any{"plan_type": "plus", "rate_limit": map[string]any{"allowed": true, "limit_reached": false,
			"primary_window":   map[string]any{"used_percent": 80, "limit_window_seconds": 18000, "reset_after_seconds": 600, "reset_at": now + 600},
			"secondary_window": map[string]any{"used_percent": 40, "limit_window_seconds": 604800, "reset_after_seconds": 6000, "reset_at": now + 6000}},
			"credits": map[string]any{"has_credits": true, "unlimited": false, "balance": "12.50"}, "rate_limit_reset_credits": map[string]any{"available_count": 3},
			"additional_rate_limits": []any{}})
		return
	}
	if !a.authorized(r.Header) {
		log.Printf("[%s] #%d REFUSED credential (chatgpt-account-id %q)", a.name, k, r.Header.Get("Chatgpt-Account-Id"))
		writeJSON(w, 401, map[string]any{"error": map[string]any{"message": "Your authentication token is not valid for this account.", "type": "invalid_request_error", "code": "token_invalid"}})
		return
	}
	switch {
	case r.Method == "GET" && p == "/backend-api/codex/models":
		if r.URL.Query().Get("client_version") == "" {
			writeJSON(w, 400, map[string]any{"detail": "client_version is required"})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(catalog)
	case r.Method == "GET" && p == "/backend-api/wham/usage":
		now := time.Now().Unix()
		win := func(pct, secs, left int) map[string]any {
			return map[string]any{"used_percent": pct, "limit_window_seconds": secs, "reset_after_seconds": left, "reset_at": now + int64(left)}
		}
		if a.name == "A" { // a weekly-only plan: one window, the week
			a.mu.Lock()
			used := 12
			if (!onDemand && a.real > 1) || a.limited {
				used = 100
			}
			a.mu.Unlock()
			writeJSON(w, 200, map[string]any{"plan_type": "pro", "rate_limit": map[string]any{"allowed": used < 100, "limit_reached": used >= 100,
				"primary_window": win(used, 604800, 300000), "secondary_window": nil},
				"credits": map[string]any{"has_credits": false, "unlimited": false, "balance": "0"}, "additional_rate_limits": []any{}})
			return
		}
		writeJSON(w, 200, map[string]any{"plan_type": "pro", "rate_limit": map[string]any{"allowed": true, "limit_reached": false,
			"primary_window": win(34, 18000, 9000), "secondary_window": win(17, 604800, 300000)},
			"credits": map[string]any{"has_credits": false, "unlimited": false, "balance": "0"},
			"additional_rate_limits": []any{map[string]any{"limit_name": "GPT-5.3-Codex-Spark", "metered_feature": "codex_bengalfox",
				"rate_limit": map[string]any{"allowed": true, "limit_reached": false, "primary_window": win(50, 18000, 7000), "secondary_window": nil}}}})
	case r.Method == "GET" && p == "/backend-api/wham/rate-limit-reset-credits":
		writeJSON(w, 200, map[string]any{"credits": []any{}, "available_count": 0})
	case r.Method == "GET" && p == "/backend-api/codex/responses" && strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
		if refuseWS {
			log.Printf("[%s] #%d refusing the WebSocket upgrade", a.name, k)
			writeJSON(w, 404, map[string]any{"detail": "Not Found"})
			return
		}
		a.serveSocket(w, r)
	case r.Method == "POST" && p == "/backend-api/codex/responses":
		a.serveHTTP(w, r, body, k)
	case r.Method == "POST" && (p == "/backend-api/codex/alpha/search" || strings.HasPrefix(p, "/backend-api/codex/images/")):
		a.serveBackendCall(w, r, body, k)
	default:
		writeJSON(w, 404, map[string]any{"detail": "Not Found"})
	}
}

func (a *account) serveHTTP(w http.ResponseWriter, r *http.Request, body []byte, k int) {
	v := verdict{Account: a.name, Seq: k, Transport: "http"}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		v.Status, v.Answer = 400, "bad_json"
		record(v)
		writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "bad json", "type": "invalid_request_error"}})
		return
	}
	if slow && req["generate"] != false {
		a.serveSlow(w, r, req, k)
		return
	}
	input, _ := req["input"].([]any)
	t := &turn{req: req, transport: "http", seq: k, context: input, turnState: r.Header.Get(stateHeader),
		marker: strings.EqualFold(r.Header.Get(liteHeader), "true")}
	id, items, state, e := a.answer(t, &v)
	if e != nil {
		v.Status = e.status
		if v.Answer == "" {
			v.Answer = fmt.Sprint(e.body["code"], ": ", e.body["message"])
		}
		record(v)
		writeJSON(w, e.status, map[string]any{"error": e.body})
		return
	}
	v.Status = 200
	record(v)
	if state != "" {
		w.Header().Set(stateHeader, state)
	}
	responses.WriteSSE(w, events(id, req, items, "", v.Tokens))
}

// serveSlow answers a turn with a message a word every 200 ms, for two minutes at most, and
// writes LOGDIR/cancelled (the time in unix nanoseconds) when its client, the relay, ends the
// request: how soon an interrupt in Codex reaches the account.
func (a *account) serveSlow(w http.ResponseWriter, r *http.Request, req map[string]any, k int) {
	model, _ := req["model"].(string)
	id := fmt.Sprintf("resp_%s_slow_%d", a.name, k)
	w.Header().Set("Content-Type", "text/event-stream")
	seq := 0
	send := func(ev map[string]any) {
		ev["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
		w.(http.Flusher).Flush()
	}
	send(map[string]any{"type": "response.created", "response": map[string]any{"id": id, "object": "response", "status": "in_progress", "model": model, "output": []any{}}})
	msg := "msg_" + id
	send(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": map[string]any{"id": msg, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
	send(map[string]any{"type": "response.content_part.added", "item_id": msg, "output_index": 0, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	record(verdict{Account: a.name, Seq: k, Transport: "http", Model: model, Status: 200, Answer: "slow"})
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < 600; i++ {
		select {
		case <-r.Context().Done():
			os.WriteFile(filepath.Join(logDir, "cancelled"), []byte(fmt.Sprint(time.Now().UnixNano())), 0o644)
			log.Printf("[%s] #%d the relay ended the slow turn after %d words", a.name, k, i)
			return
		case <-tick.C:
			send(map[string]any{"type": "response.output_text.delta", "item_id": msg, "output_index": 0, "content_index": 0, "delta": fmt.Sprintf("word%d ", i)})
		}
	}
}

// serveBackendCall answers a search or an image call Codex posts itself (through the relay).
func (a *account) serveBackendCall(w http.ResponseWriter, r *http.Request, body []byte, k int) {
	call := strings.TrimPrefix(r.URL.Path, "/backend-api/codex/")
	line := map[string]any{"account": a.name, "seq": k, "call": call, "image_turn": r.Header.Get("X-Codex-Image-Turn-Id")}
	defer func() {
		b, _ := json.Marshal(line)
		jsonlMu.Lock()
		defer jsonlMu.Unlock()
		f, err := os.OpenFile(filepath.Join(logDir, "backend.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			f.Write(append(b, '\n'))
			f.Close()
		}
		log.Printf("[%s] #%d %s: %v", a.name, k, call, line["status"])
	}()
	if !json.Valid(body) {
		line["status"] = 400
		writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "bad json", "type": "invalid_request_error"}})
		return
	}
	a.mu.Lock()
	spent := a.name == "A" && a.real >= 1
	a.mu.Unlock()
	if spent {
		line["status"] = 429
		e := errOf(429, "usage_limit_reached", "usage_limit_reached", "The usage limit has been reached")
		e.body["resets_in_seconds"] = 86400
		writeJSON(w, 429, map[string]any{"error": e.body})
		return
	}
	line["status"] = 200
	if call == "alpha/search" {
		writeJSON(w, 200, map[string]any{"output": "search results from " + a.name})
		return
	}
	writeJSON(w, 200, map[string]any{"created": time.Now().Unix(), "data": []any{map[string]any{"b64_json": responses.OnePixelPNG}}})
}

func (a *account) serveSocket(w http.ResponseWriter, r *http.Request) {
	history := map[string][]any{} // response id -> the conversation up to and with it (this socket's)
	err := responses.ServeSocket(w, r, func(_ websocket.MessageType, data []byte, req map[string]any) []map[string]any {
		k := a.logFrame(data)
		if req == nil {
			return nil
		}
		v := verdict{Account: a.name, Seq: k, Transport: "ws"}
		meta, _ := req["client_metadata"].(map[string]any)
		t := &turn{req: req, transport: "ws", seq: k}
		if s, ok := meta[liteMetaKey].(string); ok && strings.EqualFold(s, "true") {
			t.marker = true
		}
		t.turnState, _ = meta[stateKey].(string)
		input, _ := req["input"].([]any)
		var e *apiErr
		if prev, ok := req["previous_response_id"].(string); ok && prev != "" {
			v.Incremental = true
			h, known := history[prev]
			if !known {
				e = errOf(400, "invalid_request_error", "previous_response_not_found", "Previous response with id '"+prev+"' not found.")
			}
			t.context = append(append([]any{}, h...), input...)
		} else {
			t.context = input
		}
		var id, state string
		var items []map[string]any
		if e == nil {
			id, items, state, e = a.answer(t, &v)
		} else {
			v.Model, _ = req["model"].(string)
		}
		var evs []map[string]any
		if e != nil {
			v.Status = e.status
			if v.Answer == "" {
				v.Answer = fmt.Sprint(e.body["code"], ": ", e.body["message"])
			}
			evs = []map[string]any{{"type": "error", "status": e.status, "error": e.body}}
		} else {
			v.Status = 200
			evs = events(id, req, items, state, v.Tokens)
			h := append([]any{}, t.context...)
			for _, it := range items {
				h = append(h, it)
			}
			history[id] = h
		}
		record(v)
		return evs
	})
	log.Printf("[%s] socket closed: %v", a.name, err)
}

func main() {
	flag.BoolVar(&refuseWS, "refuse-websocket", false, "answer the WebSocket upgrade 404")
	flag.BoolVar(&web, "web", false, "A's tool call runs web.run and image_gen.imagegen (code mode)")
	flag.BoolVar(&slow, "slow", false, "turns stream a word every 200 ms until the relay ends them (LOGDIR/cancelled)")
	flag.BoolVar(&compact, "compact", false, "compaction v2, and A's tool prints a fact to remember (FACT-7Q2)")
	flag.BoolVar(&onDemand, "limit-on-demand", false, "A serves every request until POST /e2e/limit on its port, then answers 429")
	flag.Parse()
	if flag.NArg() != 3 {
		log.Fatal("usage: fake [-refuse-websocket] [-web] [-slow] [-compact] [-limit-on-demand] PORTA PORTB LOGDIR")
	}
	logDir = flag.Arg(2)
	os.MkdirAll(logDir, 0o755)
	var cat struct {
		Models []struct {
			Slug string `json:"slug"`
			Lite bool   `json:"use_responses_lite"`
		} `json:"models"`
	}
	if err := json.Unmarshal(catalog, &cat); err != nil {
		log.Fatal(err)
	}
	for _, m := range cat.Models {
		liteOf[m.Slug] = m.Lite
	}
	ids := map[string]string{"A": "00000000-0000-4000-8000-0000000000aa", "B": "00000000-0000-4000-8000-0000000000bb"}
	for i, name := range []string{"A", "B"} {
		a := &account{name: name, id: ids[name], states: map[string]bool{}}
		srv := &http.Server{Addr: "127.0.0.1:" + flag.Arg(i), Handler: http.HandlerFunc(a.handler)}
		go func() { log.Fatal(srv.ListenAndServe()) }()
	}
	log.Printf("fake ChatGPT backend A=%s B=%s refuse-websocket=%v", flag.Arg(0), flag.Arg(1), refuseWS)
	select {}
}
