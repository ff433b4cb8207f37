// Command fake is the upstream of `make codex-e2e`: two OpenAI-compatible accounts, A and B,
// on two loopback ports, that seal their reasoning the way the real backends do (each emits
// reasoning items whose encrypted_content only it accepts, and answers 400
// invalid_encrypted_content to any other). A answers the first turn with its reasoning and a
// call of the shell tool Codex offers, then 429 usage_limit_reached; B answers with its
// reasoning and the message "done". Every request is logged to LOGDIR (headers and body).
//
//	fake PORTA PORTB LOGDIR
package main

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

var logDir string

type account struct {
	name string
	mu   sync.Mutex
	n    int // responses requests seen
	all  int // all requests seen
}

func (a *account) prefix() string { return "gAAAAB" + a.name }

func (a *account) logReq(r *http.Request, body []byte) int {
	a.mu.Lock()
	a.all++
	k := a.all
	a.mu.Unlock()
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
			fmt.Fprintf(&sb, "%s: %s\n", h, v)
		}
	}
	os.WriteFile(base+"-headers.txt", []byte(sb.String()), 0644)
	if len(body) > 0 {
		os.WriteFile(base+"-body.json", body, 0644)
	}
	log.Printf("[%s] #%d %s %s (%d bytes)", a.name, k, r.Method, r.URL.RequestURI(), len(body))
	return k
}

func writeJSON(w http.ResponseWriter, status int, v string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, v)
}

// foreign returns an encrypted_content anywhere in input that is not ours.
func foreign(v any, own string) string {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if k == "encrypted_content" {
				if s, ok := x.(string); ok && s != "" && !strings.HasPrefix(s, own) {
					return s
				}
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

// shellCall picks a shell-like tool from the request's tools and builds a call item.
func shellCall(req map[string]any) string {
	tools, _ := req["tools"].([]any)
	type cand struct {
		name, typ string
		params    map[string]any
	}
	var cs []cand
	for _, t := range tools {
		m, _ := t.(map[string]any)
		name, _ := m["name"].(string)
		typ, _ := m["type"].(string)
		p, _ := m["parameters"].(map[string]any)
		cs = append(cs, cand{name, typ, p})
	}
	pref := []string{"shell", "shell_command", "exec_command", "local_shell", "container.exec"}
	for _, want := range pref {
		for _, c := range cs {
			if c.typ == "local_shell" && want == "local_shell" {
				return `{"type":"local_shell_call","id":"lsh_1","call_id":"call_A1","status":"completed","action":{"type":"exec","command":["bash","-lc","echo hello"],"env":{}}}`
			}
			if c.name != want {
				continue
			}
			props, _ := c.params["properties"].(map[string]any)
			args := map[string]any{}
			for pn, pv := range props {
				pm, _ := pv.(map[string]any)
				if pn == "command" || pn == "cmd" {
					if pm["type"] == "array" {
						args[pn] = []string{"bash", "-lc", "echo hello"}
					} else {
						args[pn] = "echo hello"
					}
				}
			}
			ab, _ := json.Marshal(args)
			item := map[string]any{"type": "function_call", "id": "fc_A1", "call_id": "call_A1", "name": c.name, "arguments": string(ab), "status": "completed"}
			ib, _ := json.Marshal(item)
			log.Printf("chose tool %q args %s", c.name, ab)
			return string(ib)
		}
	}
	log.Printf("no shell tool found among %d tools", len(cs))
	return `{"type":"message","id":"msg_x","status":"completed","role":"assistant","content":[{"type":"output_text","text":"no shell tool","annotations":[]}]}`
}

func stream(w http.ResponseWriter, id string, items []string) {
	if os.Getenv("TURNSTATE") == "1" {
		w.Header().Set("X-Codex-Turn-State", "ts-"+id)
	}
	resp := func(status, output string) string {
		return fmt.Sprintf(`{"id":%q,"object":"response","created_at":1764460800,"status":%q,"model":"gpt-5-codex","output":%s,"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":12}}`, id, status, output)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl, _ := w.(http.Flusher)
	seq := 0
	send := func(name, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		if fl != nil {
			fl.Flush()
		}
		seq++
	}
	send("response.created", fmt.Sprintf(`{"type":"response.created","sequence_number":%d,"response":%s}`, seq, resp("in_progress", "[]")))
	for i, it := range items {
		send("response.output_item.added", fmt.Sprintf(`{"type":"response.output_item.added","sequence_number":%d,"output_index":%d,"item":%s}`, seq, i, it))
		send("response.output_item.done", fmt.Sprintf(`{"type":"response.output_item.done","sequence_number":%d,"output_index":%d,"item":%s}`, seq, i, it))
	}
	send("response.completed", fmt.Sprintf(`{"type":"response.completed","sequence_number":%d,"response":%s}`, seq, resp("completed", "["+strings.Join(items, ",")+"]")))
}

func (a *account) handler(w http.ResponseWriter, r *http.Request) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		if gz, err := gzip.NewReader(r.Body); err == nil {
			rd = gz
		}
	}
	body, _ := io.ReadAll(rd)
	k := a.logReq(r, body)
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == "GET" && path == "/models":
		writeJSON(w, 200, `{"object":"list","data":[{"id":"gpt-5-codex","object":"model"}]}`)
		return
	case r.Method == "POST" && path == "/responses":
	default:
		writeJSON(w, 404, `{"error":{"message":"not found","type":"invalid_request_error","code":null}}`)
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		log.Printf("[%s] #%d bad json (content-encoding %q): %v", a.name, k, r.Header.Get("Content-Encoding"), err)
		writeJSON(w, 400, `{"error":{"message":"bad json","type":"invalid_request_error","code":null}}`)
		return
	}
	if enc := foreign(req["input"], a.prefix()); enc != "" {
		log.Printf("[%s] #%d REFUSED foreign sealed content %q", a.name, k, enc)
		writeJSON(w, 400, fmt.Sprintf(`{"error":{"type":"invalid_request_error","code":"invalid_encrypted_content","message":"The encrypted content %s could not be verified."}}`, enc))
		return
	}
	a.mu.Lock()
	a.n++
	n := a.n
	a.mu.Unlock()
	reasoning := fmt.Sprintf(`{"type":"reasoning","id":"rs_%s%d","summary":[],"encrypted_content":"%s-sealed-%d="}`, a.name, n, a.prefix(), n)
	id := fmt.Sprintf("resp_%s_%d", a.name, n)
	if a.name == "A" {
		if n == 1 {
			stream(w, id, []string{reasoning, shellCall(req)})
			return
		}
		log.Printf("[A] #%d answering 429", k)
		w.Header().Set("Retry-After", "3600")
		writeJSON(w, 429, `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"limit"}}`)
		return
	}
	msg := fmt.Sprintf(`{"type":"message","id":"msg_B%d","status":"completed","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[]}]}`, n)
	stream(w, id, []string{reasoning, msg})
}

func main() {
	if len(os.Args) != 4 {
		log.Fatal("usage: fake PORTA PORTB LOGDIR")
	}
	logDir = os.Args[3]
	os.MkdirAll(logDir, 0o755)
	for i, name := range []string{"A", "B"} {
		a := &account{name: name}
		srv := &http.Server{Addr: "127.0.0.1:" + os.Args[1+i], Handler: http.HandlerFunc(a.handler)}
		go func() { log.Fatal(srv.ListenAndServe()) }()
	}
	log.Printf("fake upstream A=%s B=%s", os.Args[1], os.Args[2])
	select {}
}
