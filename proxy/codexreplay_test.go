package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"github.com/klauspost/compress/zstd"

	"github.com/codexrelay/codexrelay/proxy"
)

// The real Codex CLI's requests (testdata/codex-0.171, made by packaging/codex-e2e/capture.sh)
// replayed through the relay to a ChatGPT account: what reaches the upstream is what Codex
// sent, but for the documented differences. A header Codex sends that the relay would drop
// fails here unless it is one the relay owns, each named below with the reason.

const captures = "testdata/codex-0.171"

type captured struct {
	file            string
	Kind            string      `json:"kind"`
	Method          string      `json:"method"`
	Path            string      `json:"path"`
	Headers         [][2]string `json:"headers"`
	ContentEncoding string      `json:"content_encoding"`
	Body            json.RawMessage
}

func loadCaptures(t *testing.T, dir string) []captured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(captures, dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures in %s: %v", dir, err)
	}
	slices.Sort(files)
	var out []captured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c captured
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		c.file = filepath.Base(f)
		out = append(out, c)
	}
	return out
}

// relayOwned are the headers Codex sends that the relay does not pass on as they came, and why.
var relayOwned = map[string]string{
	"Authorization":        "the account's credential replaces the client's local key",
	"Chatgpt-Account-Id":   "the account's own",
	"Originator":           "the relay's identity (codex_cli_rs), the same on every call to an account",
	"User-Agent":           "likewise",
	"Version":              "likewise: the catalog's client version",
	"Openai-Beta":          "names the transport, which the relay chooses per account",
	"Accept":               "the relay asks for what it reads",
	"Accept-Encoding":      "the relay's transport negotiates its own",
	"Content-Type":         "the relay sends its own body",
	"Content-Length":       "likewise",
	"Content-Encoding":     "the relay decodes the body (zstd) and sends it plain",
	"Host":                 "the account's",
	"X-Codex-Turn-State":   "sent only to the account that issued it (checked below)",
	"X-Codex-Routing-Hint": "written for the model and tier the relay sends (checked below)",
	"Connection":           "hop-by-hop",
	"Upgrade":              "hop-by-hop",
}

var socketHandshake = []string{"Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Extensions"}

// bundledCatalog answers GET .../models with the catalog Codex 0.171 bundles.
func bundledCatalog(t *testing.T) func(w http.ResponseWriter, r *http.Request) {
	b, err := os.ReadFile(filepath.Join(captures, "models-bundled.json"))
	if err != nil {
		t.Fatal(err)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
}

// checkHeaders compares the headers Codex sent with those the account got.
func checkHeaders(t *testing.T, what string, sent [][2]string, got http.Header, skip ...string) {
	t.Helper()
	for _, h := range sent {
		k := http.CanonicalHeaderKey(h[0])
		if slices.Contains(skip, k) {
			continue
		}
		if _, owned := relayOwned[k]; owned {
			continue
		}
		if v := got.Get(k); v != h[1] {
			t.Errorf("%s: Codex's %s reached the account as %q, want %q", what, k, v, h[1])
		}
	}
}

func header(sent [][2]string, name string) string {
	for _, h := range sent {
		if strings.EqualFold(h[0], name) {
			return h[1]
		}
	}
	return ""
}

// The HTTP captures (a Lite model, gpt-5.5, a multi-agent spawn, the ChatGPT login's zstd
// bodies): each request reaches the ChatGPT account byte for byte, with every Codex header.
func TestCodexCapturesOverHTTP(t *testing.T) {
	for _, dir := range []string{"http-lite", "http-nonlite", "multiagent", "chatgpt-http"} {
		t.Run(dir, func(t *testing.T) {
			up := newUpstream(t, nil)
			up.models = bundledCatalog(t)
			issued := false
			up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
				if !issued {
					issued = true // the capture server issued its turn state on its first answer
					w.Header().Set("X-Codex-Turn-State", "ts-capture-http")
				}
				writeEvents(w, textEvents(fmt.Sprintf("resp_up_%d", n), "gpt-5.6-sol", "done"))
			}
			r := newRelay(t, proxy.Options{}, chatgptAccount("a", up))
			sent := 0
			for _, c := range loadCaptures(t, dir) {
				if c.Kind != "http" || c.Method != http.MethodPost || !strings.HasSuffix(strings.SplitN(c.Path, "?", 2)[0], "/responses") {
					continue
				}
				body := []byte(c.Body)
				req, _ := http.NewRequest(http.MethodPost, r.URL+"/v1/responses", bytes.NewReader(body))
				for _, h := range c.Headers {
					req.Header.Add(h[0], h[1])
				}
				req.Header.Del("Host")
				req.Header.Del("Content-Length")
				if c.ContentEncoding == "zstd" {
					enc, _ := zstd.NewWriter(nil)
					req.Body = nopCloser{bytes.NewReader(enc.EncodeAll(body, nil))}
					req.ContentLength = -1
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("%s: status %d", c.file, resp.StatusCode)
				}
				got := up.requests()[sent]
				sent++
				if !bytes.Equal(got.Body, body) {
					t.Errorf("%s: the body changed on its way (%d bytes, want %d)", c.file, len(got.Body), len(body))
				}
				checkHeaders(t, c.file, c.Headers, got.Header)
				if st := header(c.Headers, "x-codex-turn-state"); got.Header.Get("X-Codex-Turn-State") != st {
					t.Errorf("%s: turn state %q reached the account as %q", c.file, st, got.Header.Get("X-Codex-Turn-State"))
				}
				var b struct {
					Model string `json:"model"`
				}
				json.Unmarshal(body, &b)
				if hint := got.Header.Get("X-Codex-Routing-Hint"); hint != "model="+b.Model {
					t.Errorf("%s: routing hint %q", c.file, hint)
				}
				if want := header(c.Headers, "x-codex-routing-hint"); want != "" && got.Header.Get("X-Codex-Routing-Hint") != want {
					t.Errorf("%s: routing hint %q, Codex's own %q", c.file, got.Header.Get("X-Codex-Routing-Hint"), want)
				}
			}
			if sent < 2 {
				t.Fatalf("%s: %d requests replayed", dir, sent)
			}
		})
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// The WebSocket captures: the handshake's headers reach the account's socket, a warm-up is
// answered by the relay, the turn after it goes up with the conversation replayed (the
// upstream never saw the warm-up's response), and the turn after the tool goes as Codex sent
// it but for stream (no place in a frame), its turn state kept for the account that issued it
// in the stream.
// socketRecorder is the ChatGPT account of a socket replay: it serves the bundled catalog and
// answers each frame with a short turn (the first after a response.metadata carrying a turn
// state), and keeps the handshake's headers and every frame that reached it.
type socketRecorder struct {
	mu        sync.Mutex
	frames    [][]byte
	handshake http.Header
}

func (rec *socketRecorder) serve(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/models") {
			bundledCatalog(t)(w, r)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c.SetReadLimit(64 << 20)
		rec.mu.Lock()
		rec.handshake = r.Header.Clone()
		rec.mu.Unlock()
		for n := 0; ; n++ {
			_, data, err := c.Read(context.Background())
			if err != nil {
				return
			}
			rec.mu.Lock()
			rec.frames = append(rec.frames, data)
			rec.mu.Unlock()
			ctx := context.Background()
			if n == 0 {
				c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.metadata","headers":{"x-codex-turn-state":"ts-capture-1"}}`))
			}
			for _, ev := range textEvents(fmt.Sprintf("resp_up_%d", n), "m", "done") {
				c.Write(ctx, websocket.MessageText, []byte(sseData(ev)))
			}
		}
	})
}

func TestCodexCapturesOverASocket(t *testing.T) {
	for _, dir := range []string{"ws-lite", "ws-nonlite", "chatgpt-ws"} {
		t.Run(dir, func(t *testing.T) {
			rec := &socketRecorder{}
			up := httptest.NewServer(rec.serve(t))
			defer up.Close()
			acct := proxy.Account{Name: "a", Kind: proxy.KindChatGPT, BaseURL: up.URL + "/backend-api/codex",
				Credentials: proxy.Static{Token: "access-a", AccountID: "acct-a"}}
			r := newRelay(t, proxy.Options{}, acct)
			var sentHandshake [][2]string
			var c *websocket.Conn
			prev := ""
			var turns [][]byte
			var warm []any // the input of the warm-up the first turn follows
			for _, capture := range loadCaptures(t, dir) {
				switch capture.Kind {
				case "ws-handshake":
					sentHandshake = capture.Headers
					h := http.Header{}
					for _, kv := range capture.Headers {
						k := http.CanonicalHeaderKey(kv[0])
						if k == "Host" || k == "Connection" || k == "Upgrade" || slices.Contains(socketHandshake, k) {
							continue
						}
						h.Add(kv[0], kv[1])
					}
					var err error
					c, _, err = websocket.Dial(context.Background(), strings.Replace(r.URL, "http", "ws", 1)+"/v1/responses", &websocket.DialOptions{HTTPHeader: h})
					if err != nil {
						t.Fatal(err)
					}
					c.SetReadLimit(64 << 20)
					defer c.CloseNow()
				case "ws-frame":
					var f map[string]json.RawMessage
					json.Unmarshal(capture.Body, &f)
					frame := []byte(capture.Body)
					if _, ok := f["previous_response_id"]; ok {
						// The response Codex follows is the one the relay answered.
						f["previous_response_id"], _ = json.Marshal(prev)
						frame, _ = json.Marshal(f)
					}
					evs := turn(t, c, string(frame))
					prev = responseID(t, evs)
					if string(f["generate"]) != "false" {
						turns = append(turns, frame)
					} else if len(turns) == 0 {
						json.Unmarshal(f["input"], &warm)
					}
				}
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			frames, handshake := rec.frames, rec.handshake
			if len(frames) != len(turns) || len(turns) < 2 {
				t.Fatalf("%d turns sent, %d frames reached the account", len(turns), len(frames))
			}
			checkHeaders(t, "handshake", sentHandshake, handshake, socketHandshake...)
			for i, got := range frames {
				var want, have map[string]any
				json.Unmarshal(turns[i], &want)
				json.Unmarshal(got, &have)
				delete(want, "stream")
				if i == 0 {
					// The warm-up's response is the relay's: the conversation goes up whole,
					// the warm-up's input before the turn's.
					delete(want, "previous_response_id")
					in, _ := want["input"].([]any)
					want["input"] = append(slices.Clone(warm), in...)
				}
				if fmt.Sprint(have) != fmt.Sprint(want) {
					t.Errorf("frame %d reached the account changed:\n got %.600s\nwant %.600s", i, got, turns[i])
				}
			}
		})
	}
}
