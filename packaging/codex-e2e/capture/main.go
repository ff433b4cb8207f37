// Command capture is a loopback stand-in for the Responses backend that records everything the
// real Codex CLI sends, to make the fixtures under proxy/testdata/codex-<version>/ (see
// packaging/codex-e2e/capture.sh). It serves
//
//   - GET  .../models: the catalog file given with -catalog (Codex's {"models":[...]} shape);
//   - POST .../responses: a scripted Responses stream as SSE;
//   - GET  .../responses: the same events over a WebSocket, one JSON object per text frame;
//   - GET  .../wham/accounts/check: the ChatGPT account of the request, without a routing constraint;
//
// and answers anything else 404 after recording it. The script is a tool loop: a request that
// carries no tool output (function_call_output, custom_tool_call_output) is answered with a reasoning item and a function_call (of the
// shell tool Codex offered, or with -scenario spawn of the collaboration tool spawn_agent, whose
// sealed "message" is named in encrypted_function_args, and then of wait_agent); a request that
// carries the output, or a sub-agent's request, with the assistant message "done". The
// first HTTP response carries the header x-codex-turn-state: ts-capture-http; the first
// WebSocket response that generates (not the warm-up, generate:false) starts with a
// response.metadata event carrying x-codex-turn-state: ts-capture-1, so that the captures show
// whether Codex replays them.
//
// Each HTTP request and each client WebSocket frame is written to -out as NNN-<kind>.json, in
// arrival order, with the header lines as received (names in their wire casing, in order) and
// the body decompressed (the encoding it came in is recorded). -redact OLD=NEW (repeatable)
// replaces machine paths everywhere in a record, and the Authorization value is always written
// as "Bearer REDACTED", followed by which kind of credential it was (see credentialKind).
//
// With -refuse-websocket a WebSocket handshake is answered 426, so that Codex falls back to HTTP.
// With -tls-cert/-tls-key it serves HTTPS (Codex in ChatGPT mode wants an HTTPS backend).
//
//	capture -listen 127.0.0.1:PORT -out DIR -catalog models.json [-scenario tool|spawn]
//	        [-tls-cert cert.pem -tls-key key.pem] [-refuse-websocket] [-redact OLD=NEW]...
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/codexrelay/codexrelay/packaging/codex-e2e/internal/responses"
)

var (
	outDir   string
	scenario string
	catalog  []byte
	redacts  []string // OLD, NEW pairs
	refuseWS bool     // answer WebSocket handshakes 426
	// rateLimits: responses carry the x-codex-primary/secondary-* window headers
	rateLimits bool
	// interruptAnswer: what -scenario slow answers a response.interrupt with (none | incomplete)
	interruptAnswer string

	mu        sync.Mutex
	seq       int  // records written
	served    int  // responses served (ids)
	httpState bool // the HTTP turn state was issued
	wsState   bool // the WebSocket turn state was issued
	waited    bool // spawn scenario: wait_agent was called
	compacted bool // compact scenario: a compaction was answered
)

type redactFlag struct{}

func (redactFlag) String() string { return "" }
func (redactFlag) Set(s string) error {
	old, new, ok := strings.Cut(s, "=")
	if !ok || old == "" {
		return fmt.Errorf("want OLD=NEW, got %q", s)
	}
	redacts = append(redacts, old, new)
	return nil
}

func redact(s string) string {
	if len(redacts) == 0 {
		return s
	}
	return strings.NewReplacer(redacts...).Replace(s)
}

// rawConn keeps every byte read from a connection, so that a handler can find its request's
// header block as it came over the wire (net/http canonicalizes header names).
type rawConn struct {
	net.Conn
	mu   sync.Mutex
	buf  []byte
	used int // bytes of buf already matched to a request
}

func (c *rawConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.buf = append(c.buf, p[:n]...)
	c.mu.Unlock()
	return n, err
}

type connKey struct{}

// rawHeaders returns r's header lines as received, in order ([name, value] pairs), falling back
// to net/http's canonical map if the header block is not found.
func rawHeaders(r *http.Request) [][2]string {
	if c, ok := r.Context().Value(connKey{}).(*rawConn); ok {
		c.mu.Lock()
		defer c.mu.Unlock()
		line := []byte(r.Method + " " + r.RequestURI + " ")
		if i := bytes.Index(c.buf[c.used:], line); i >= 0 {
			start := c.used + i
			if j := bytes.Index(c.buf[start:], []byte("\r\n\r\n")); j >= 0 {
				block := string(c.buf[start : start+j])
				c.used = start + j + 4
				var out [][2]string
				for _, l := range strings.Split(block, "\r\n")[1:] {
					name, value, _ := strings.Cut(l, ":")
					out = append(out, [2]string{name, strings.TrimLeft(value, " \t")})
				}
				return out
			}
		}
	}
	var out [][2]string
	for name, vs := range r.Header {
		for _, v := range vs {
			out = append(out, [2]string{name, v})
		}
	}
	out = append(out, [2]string{"Host", r.Host})
	return out
}

// record writes one numbered record: meta fields first (in the order given), then body verbatim
// if it is JSON, else as a string.
func record(kind string, meta [][2]any, body []byte) {
	mu.Lock()
	seq++
	n := seq
	mu.Unlock()
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n  \"seq\": %d,\n  \"kind\": %q", n, kind)
	for _, kv := range meta {
		v, _ := responses.Marshal(kv[1])
		fmt.Fprintf(&b, ",\n  %q: %s", kv[0], v)
	}
	if body != nil {
		if json.Valid(body) {
			fmt.Fprintf(&b, ",\n  \"body\": %s", bytes.TrimSpace(body))
		} else {
			v, _ := responses.Marshal(string(body))
			fmt.Fprintf(&b, ",\n  \"body_text\": %s", v)
		}
	}
	b.WriteString("\n}\n")
	name := filepath.Join(outDir, fmt.Sprintf("%03d-%s.json", n, kind))
	if err := os.WriteFile(name, []byte(redact(b.String())), 0o644); err != nil {
		log.Print(err)
	}
	log.Printf("recorded %s", filepath.Base(name))
}

// credentialKind says which credential Codex sent without its value: " (local key)" for the
// provider block's experimental_bearer_token (sk-...), " (ChatGPT token)" for a login's JWT.
func credentialKind(v string) string {
	tok := strings.TrimPrefix(v, "Bearer ")
	switch {
	case strings.HasPrefix(tok, "sk-"):
		return " (local key)"
	case strings.Count(tok, ".") == 2:
		return " (ChatGPT token)"
	}
	return ""
}

func headerMeta(r *http.Request) [][2]any {
	hs := rawHeaders(r)
	for i, h := range hs {
		if strings.EqualFold(h[0], "authorization") {
			hs[i][1] = "Bearer REDACTED" + credentialKind(fmt.Sprint(h[1]))
		}
	}
	return [][2]any{{"method", r.Method}, {"path", r.URL.RequestURI()}, {"proto", r.Proto}, {"headers", hs}}
}

func handle(w http.ResponseWriter, r *http.Request) {
	wire, _ := io.ReadAll(r.Body)
	enc := r.Header.Get("Content-Encoding")
	body, err := responses.Decode(enc, wire)
	if err != nil {
		log.Printf("cannot decode %s body: %v", enc, err)
		body = wire
	}
	meta := headerMeta(r)
	if len(wire) > 0 || enc != "" {
		meta = append(meta, [2]any{"content_encoding", enc}, [2]any{"body_bytes_on_wire", len(wire)}, [2]any{"body_bytes", len(body)})
	}
	path := r.URL.Path
	isWS := r.Method == http.MethodGet && strings.HasSuffix(path, "/responses") && strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
	kind := "http"
	if isWS {
		kind = "ws-handshake"
	}
	if len(body) == 0 {
		body = nil
	}
	record(kind, meta, body)
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		w.Header().Set("Content-Type", "application/json")
		w.Write(catalog)
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/wham/accounts/check"):
		// ChatGPT workspace routing discovery: the signed-in account, with no residency constraint.
		acct := r.Header.Get("chatgpt-account-id")
		w.Header().Set("Content-Type", "application/json")
		w.Write(responses.JSON(map[string]any{"accounts": []any{map[string]any{"id": acct, "plan_type": "pro",
			"workspace_backend_origin": "NO_CONSTRAINT", "account_routing_override": "NO_CONSTRAINT"}}, "account_ordering": []string{acct}}))
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses/compact"):
		// compaction v1 (legacy): the compacted history as one JSON answer
		n, id := nextResponse()
		w.Header().Set("Content-Type", "application/json")
		w.Write(responses.JSON(map[string]any{"id": id, "object": "response.compaction", "output": []any{map[string]any{"type": "compaction",
			"id": fmt.Sprintf("cmp_capture_%d", n), "encrypted_content": fmt.Sprintf("gAAAABcapture-sealed-compaction-%d==", n)}}}))
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/alpha/search"):
		// The web namespace's search (web.run): the backend answers the results as one text.
		w.Header().Set("Content-Type", "application/json")
		w.Write(responses.JSON(map[string]any{"output": "capture search results: codex relay"}))
	case r.Method == http.MethodPost && (strings.HasSuffix(path, "/images/generations") || strings.HasSuffix(path, "/images/edits")):
		// image_gen.imagegen: the Images API's answer, one 1x1 PNG.
		w.Header().Set("Content-Type", "application/json")
		w.Write(responses.JSON(map[string]any{"created": 1764460800, "data": []any{map[string]any{"b64_json": responses.OnePixelPNG}}}))
	case isWS && refuseWS:
		// 426 makes Codex fall back to HTTP for the rest of the session.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUpgradeRequired)
		io.WriteString(w, `{"error":{"message":"websocket refused by the capture server","type":"invalid_request_error","code":null}}`)
	case isWS && scenario == "slow":
		serveSlowSocket(w, r)
	case isWS:
		serveSocket(w, r)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, 400)
			return
		}
		mu.Lock()
		first := !httpState
		httpState = true
		mu.Unlock()
		if first {
			w.Header().Set("x-codex-turn-state", "ts-capture-http")
		}
		if rateLimits {
			// what the ChatGPT backend says of the account's windows on every response
			h := w.Header()
			h.Set("x-codex-primary-used-percent", "42")
			h.Set("x-codex-primary-window-minutes", "300")
			h.Set("x-codex-primary-reset-at", "4102444800")
			h.Set("x-codex-secondary-used-percent", "17")
			h.Set("x-codex-secondary-window-minutes", "10080")
			h.Set("x-codex-secondary-reset-at", "4102444800")
		}
		responses.WriteSSE(w, answer(req, r.Header))
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(404)
		io.WriteString(w, `{"error":{"message":"not found","type":"invalid_request_error","code":null}}`)
	}
}

// serveSocket records every client frame and answers each response.create with its events.
func serveSocket(w http.ResponseWriter, r *http.Request) {
	err := responses.ServeSocket(w, r, func(typ websocket.MessageType, data []byte, req map[string]any) []map[string]any {
		meta := [][2]any{{"message_type", typ.String()}, {"bytes", len(data)}}
		record("ws-frame", meta, data)
		if req == nil {
			return nil
		}
		events := answer(req, r.Header)
		mu.Lock()
		first := !wsState && req["generate"] != false // the turn's first response, not a warm-up
		wsState = wsState || first
		mu.Unlock()
		if first {
			// Spliced in after response.created, without a sequence_number of its own.
			md := map[string]any{"type": "response.metadata", "headers": map[string]any{"x-codex-turn-state": "ts-capture-1"}}
			events = append(events[:1:1], append([]map[string]any{md}, events[1:]...)...)
		}
		return events
	})
	log.Printf("socket closed: %v", err)
}

// serveSlowSocket is -scenario slow over a WebSocket: a turn is answered with a message whose
// text comes one word every 200 ms (for a minute), while every client frame is recorded as it
// arrives, so that a capture shows what Codex sends when its user interrupts the turn (Esc)
// and what it does after. On a response.interrupt the stream stops; what is answered then is
// -interrupt-answer: "none" (nothing), "incomplete" (response.incomplete, reason interrupted).
func serveSlowSocket(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(64 << 20)
	ctx := r.Context()
	interrupts := make(chan map[string]any, 4)
	creates := make(chan map[string]any, 4)
	go func() {
		defer close(creates)
		for {
			typ, data, err := c.Read(ctx)
			if err != nil {
				log.Printf("socket read: %v", err)
				return
			}
			record("ws-frame", [][2]any{{"message_type", typ.String()}, {"bytes", len(data)}}, data)
			var req map[string]any
			json.Unmarshal(data, &req)
			switch req["type"] {
			case "response.create":
				creates <- req
			default:
				select {
				case interrupts <- req:
				default:
				}
			}
		}
	}()
	write := func(ev map[string]any) bool { return c.Write(ctx, websocket.MessageText, responses.JSON(ev)) == nil }
	for req := range creates {
		n, id := nextResponse()
		model, _ := req["model"].(string)
		st := responses.Stream{ID: id, Model: model, CreatedAt: 1764460800, ParallelToolCalls: req["parallel_tool_calls"]}
		if req["generate"] == false {
			for _, ev := range st.Events() {
				write(ev)
			}
			continue
		}
		msg := fmt.Sprintf("msg_capture_%d", n)
		seq := 0
		send := func(ev map[string]any) bool { ev["sequence_number"] = seq; seq++; return write(ev) }
		send(map[string]any{"type": "response.created", "response": map[string]any{"id": id, "object": "response", "status": "in_progress", "model": model, "output": []any{}}})
		send(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": map[string]any{"id": msg, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
		send(map[string]any{"type": "response.content_part.added", "item_id": msg, "output_index": 0, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		tick := time.NewTicker(200 * time.Millisecond)
	stream:
		for i := 0; i < 300; i++ {
			select {
			case in := <-interrupts:
				log.Printf("interrupted after %d words: %v", i, in)
				if interruptAnswer == "incomplete" {
					send(map[string]any{"type": "response.incomplete", "response": map[string]any{"id": id, "object": "response", "status": "incomplete",
						"incomplete_details": map[string]any{"reason": "interrupted"}, "model": model, "output": []any{}}})
				}
				break stream
			case <-tick.C:
				send(map[string]any{"type": "response.output_text.delta", "item_id": msg, "output_index": 0, "content_index": 0, "delta": fmt.Sprintf("word%d ", i)})
			case <-ctx.Done():
				break stream
			}
		}
		tick.Stop()
	}
	log.Printf("slow socket closed")
}

// maxResponses bounds a run: later requests are answered "done", whatever they carry.
const maxResponses = 8

// nextResponse counts one more response served and returns its number and id.
func nextResponse() (int, string) {
	mu.Lock()
	served++
	n := served
	mu.Unlock()
	return n, fmt.Sprintf("resp_capture_%d", n)
}

// answer scripts the response to one request as its stream of events.
func answer(req map[string]any, h http.Header) []map[string]any {
	n, id := nextResponse()
	model, _ := req["model"].(string)
	input, _ := req["input"].([]any)
	var items []map[string]any
	sub := h.Get("x-openai-subagent") != "" || responses.HasItem(input, "agent_message")
	output := responses.HasItem(input, "function_call_output") || responses.HasItem(input, "custom_tool_call_output")
	mu.Lock()
	wait := scenario == "spawn" && !sub && output && !waited // the spawn's output: wait for the agent
	waited = waited || wait
	mu.Unlock()
	switch {
	case req["generate"] == false:
		// a warm-up request: no output
	case scenario == "compact" && responses.LastItemType(input) == "compaction_trigger":
		// compaction v2: one item that stands for the whole history before it, sealed
		items = append(items, map[string]any{"type": "compaction", "id": fmt.Sprintf("cmp_capture_%d", n),
			"encrypted_content": fmt.Sprintf("gAAAABcapture-sealed-compaction-%d==", n)})
		mu.Lock()
		compacted = true
		mu.Unlock()
	case scenario == "compact" && strings.Contains(responses.LastUserText(input), "CONTEXT CHECKPOINT COMPACTION"):
		// local compaction: the summary turn
		items = append(items, message(n, "SUMMARY: the tool printed hi; nothing remains to do."))
		mu.Lock()
		compacted = true
		mu.Unlock()
	case sub || n > maxResponses || output && !wait:
		items = append(items, message(n, "done"))
	default:
		want := []string{"exec_command", "shell_command", "shell", "exec"}
		if wait {
			want = []string{"wait_agent"}
		} else if scenario == "spawn" {
			want = []string{"spawn_agent"}
		}
		items = append(items, responses.Reasoning(fmt.Sprintf("rs_capture_%d", n), fmt.Sprintf("gAAAABcapture-sealed-reasoning-%d==", n)))
		items = append(items, toolCall(req, n, want))
	}
	st := responses.Stream{ID: id, Model: model, CreatedAt: 1764460800, ParallelToolCalls: req["parallel_tool_calls"],
		Items: items, ArgumentDeltas: true}
	mu.Lock()
	if scenario == "compact" && compacted {
		st.TotalTokens = 200 // under the run's compaction limit (1000): Codex compacts once
	}
	mu.Unlock()
	return st.Events()
}

func message(n int, text string) map[string]any {
	return responses.Message(fmt.Sprintf("msg_capture_%d", n), text)
}

// toolCall builds a call of the first tool of want that the request offers: the top-level tools
// and those of an additional_tools input item (Responses Lite).
func toolCall(req map[string]any, n int, want []string) map[string]any {
	top, _ := req["tools"].([]any)
	input, _ := req["input"].([]any)
	tools := responses.Offered(top, input)
	var names []string
	for _, t := range tools {
		names = append(names, t.String())
	}
	log.Printf("offered tools: %s", strings.Join(names, " "))
	t, ok := responses.Find(tools, want)
	if !ok {
		log.Printf("no tool of %v offered", want)
		return message(n, "no tool")
	}
	args := argsFor(t.Def)
	call := responses.Call(fmt.Sprintf("fc_capture_%d", n), fmt.Sprintf("call_capture_%d", n), t, args)
	if sealed := encryptedParams(t.Def); len(sealed) > 0 {
		// encrypted_function_args names the arguments whose values the backend sealed
		// (the parameters the tool marks "encrypted": true); [] would mean plain text.
		call["encrypted_function_args"] = sealed
	}
	log.Printf("calling %s/%s %s", t.Namespace, t.Name(), args)
	return call
}

// encryptedParams lists the parameters def marks "encrypted": true (the collaboration tools' messages).
func encryptedParams(def map[string]any) []string {
	params, _ := def["parameters"].(map[string]any)
	props, _ := params["properties"].(map[string]any)
	var out []string
	for name, p := range props {
		if pm, _ := p.(map[string]any); pm["encrypted"] == true {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// argsFor fills the call's arguments from the tool's parameter names.
func argsFor(def map[string]any) string {
	if def["type"] == "custom" { // code mode's exec: JavaScript calling the nested shell tool
		if scenario == "web" { // ... or the web and image_gen namespaces' tools
			return responses.WebScript
		}
		return `const r = await tools.exec_command({cmd: "echo hi"}); text(r);`
	}
	params, _ := def["parameters"].(map[string]any)
	props, _ := params["properties"].(map[string]any)
	args := map[string]any{}
	for name, p := range props {
		pm, _ := p.(map[string]any)
		switch name {
		case "cmd", "command":
			if pm["type"] == "array" {
				args[name] = []string{"bash", "-lc", "echo hi"}
			} else {
				args[name] = "echo hi"
			}
		case "task_name":
			args[name] = "capture_helper"
		case "timeout_ms":
			args[name] = 10000
		case "message":
			if pm["encrypted"] == true {
				args[name] = "gAAAABcapture-sealed-spawn-message-1=="
			}
		}
	}
	return string(responses.JSON(args))
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	catalogPath := flag.String("catalog", "", "the model catalog served on .../models")
	flag.StringVar(&outDir, "out", "", "folder the records are written to")
	flag.StringVar(&scenario, "scenario", "tool", "tool (call the shell tool), spawn (call spawn_agent), web (code mode calls web.run and image_gen.imagegen) or slow (a socket turn streamed slowly, to be interrupted) or compact (a usage over 1000 tokens until the history is compacted, remotely or locally)")
	flag.StringVar(&interruptAnswer, "interrupt-answer", "none", "with -scenario slow: what a response.interrupt is answered with (none | incomplete)")
	flag.BoolVar(&rateLimits, "rate-limits", false, "send the x-codex-primary/secondary-* window headers on HTTP responses")
	flag.BoolVar(&refuseWS, "refuse-websocket", false, "answer WebSocket handshakes 426 Upgrade Required (Codex then uses HTTP)")
	tlsCert := flag.String("tls-cert", "", "serve HTTPS with this certificate (PEM)")
	tlsKey := flag.String("tls-key", "", "the key of -tls-cert (PEM)")
	flag.Var(redactFlag{}, "redact", "OLD=NEW: replace OLD in every record (repeatable)")
	flag.Parse()
	if outDir == "" || *catalogPath == "" {
		flag.Usage()
		os.Exit(2)
	}
	var err error
	if catalog, err = os.ReadFile(*catalogPath); err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if *tlsCert != "" {
		// TLS under the raw recorder, so that it sees the plaintext. No ALPN: HTTP/1.1 only.
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			log.Fatal(err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
	}
	log.Printf("capture listening on %s", ln.Addr())
	srv := &http.Server{Handler: http.HandlerFunc(handle),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }}
	log.Fatal(srv.Serve(rawListener{ln}))
}

type rawListener struct{ net.Listener }

func (l rawListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &rawConn{Conn: c}, nil
}
