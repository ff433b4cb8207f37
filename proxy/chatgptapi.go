package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/proxy/internal/stat"
)

// The ChatGPT backend's routes, for a Codex whose chatgpt_base_url is the relay (app/codex.go
// writes it where the relay serves HTTPS: Codex wants an HTTPS ChatGPT origin). Codex reads
// its limits there for /status (and Codex's desktop app blocks on them), discovers its
// workspace, and syncs plugins, apps, settings and analytics, always with its own ChatGPT
// sign-in:
//
//   - GET /backend-api/wham/usage answers the user's own usage with the pool's windows over it
//     (poolusage.go), so that /status shows what the pool can still serve and a limit is
//     reached only when no account can serve;
//   - GET /backend-api/wham/accounts/check answers the workspace discovery itself, without a
//     routing constraint, so that Codex keeps its ChatGPT calls on the relay;
//   - everything else under /backend-api/ goes as it came, with Codex's own sign-in, to the
//     ChatGPT backend (Options.ChatGPTBackend), and so does the usage when the pool has no
//     ChatGPT account: these calls are the signed-in user's own, not the pool's.
//
// Codex sends its ChatGPT token here, not the local key, so these routes need none (they
// spend nothing of the pool); the loopback and browser guards still apply. Each is traced as
// route "chatgpt" with its path; no header, and so no token, is ever recorded.

// RouteChatGPT is the trace route of a ChatGPT backend call (Trace.Path says which).
const RouteChatGPT = "chatgpt"

// chatgptPrefix is where the ChatGPT backend's routes are served (Codex's chatgpt_base_url).
const chatgptPrefix = "/backend-api/"

// defaultChatGPTBackend is where the calls the relay does not answer itself go by default.
const defaultChatGPTBackend = "https://chatgpt.com/backend-api"

// ChatGPTBackendOf is the backend root of a ChatGPT Codex base URL:
// https://chatgpt.com/backend-api/codex -> https://chatgpt.com/backend-api.
func ChatGPTBackendOf(codexBase string) string {
	return strings.TrimSuffix(strings.TrimRight(codexBase, "/"), "/codex")
}

// servePoolUsage answers Codex's usage read with the pool's windows over the signed-in user's
// own answer (poolusage.go). With no ChatGPT account in the pool, or none that can serve with
// a fresh reading, the call goes to the backend as it came.
func (x *exchange) servePoolUsage(path string) {
	s, w, r := x.s, x.w, x.r
	x.t.Path = truncate(r.URL.Path, 200)
	pw, ok := s.poolUsage(r.Context())
	if !ok || pw.serving && !pw.servingCounted {
		x.passThrough(path)
		return
	}
	x.t.Account = strings.Join(pw.counted, ",")
	if len(pw.unread) > 0 {
		x.t.Error = "pooled without " + strings.Join(pw.unread, ", ") + ": no usage read in the last " + usageFresh.String()
	}
	status, own, header, got := s.ownUsage(r)
	switch {
	case !got:
		// The pool's figures go only over a sign-in the backend accepted (routes.go, signIn).
		x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error",
			Message: "the ChatGPT backend could not be reached to check Codex's sign-in, so the pool's usage is not given"}, OutcomeError)
	case status/100 != 2:
		// The user's sign-in was refused (or the call was): Codex is told, as by the backend.
		x.t.Error = "the ChatGPT backend answered the user's own usage " + strconv.Itoa(status)
		for _, k := range []string{"Content-Type", "Www-Authenticate"} {
			if v := header.Get(k); v != "" {
				w.Header().Set(k, v)
			}
		}
		x.writeRaw(status, own)
	default:
		x.writeRaw(http.StatusOK, pw.overlay(own))
	}
}

// serveAccountsCheck answers Codex's workspace routing discovery for the account it is
// signed in with: no routing constraint, so that its ChatGPT calls stay on chatgpt_base_url.
func (x *exchange) serveAccountsCheck(string) {
	r := x.r
	x.t.Path = truncate(r.URL.Path, 200)
	id := truncate(strings.TrimSpace(r.Header.Get("Chatgpt-Account-Id")), 128)
	accounts, order := []any{}, []string{}
	if id != "" {
		accounts = append(accounts, map[string]any{"id": id, "workspace_backend_origin": "NO_CONSTRAINT",
			"account_routing_override": "NO_CONSTRAINT"})
		order = append(order, id)
	}
	x.writeJSON(http.StatusOK, map[string]any{"accounts": accounts, "account_ordering": order})
}

// passThrough sends a ChatGPT backend call as it came (Codex's own credential
// included) to Options.ChatGPTBackend and relays the answer as it streams.
func (x *exchange) passThrough(string) {
	s, w, r := x.s, x.w, x.r
	x.t.Path = truncate(r.URL.Path, 200)
	if !plainPath(r.URL.EscapedPath()) {
		// An encoded "..", or an encoded slash, would reach another route of chatgpt.com than
		// the one named (ServeMux cleans only what it decodes).
		x.reject(errInvalid("invalid_path", "", "the path "+truncate(r.URL.EscapedPath(), 200)+
			" has a dot segment or an encoded slash: Codex Relay passes on only plain paths"), OutcomeRejected)
		return
	}
	target, err := url.Parse(s.opt.ChatGPTBackend)
	if err != nil || target.Host == "" {
		x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "no_chatgpt_backend",
			Message: "Codex Relay has no ChatGPT backend to send " + truncate(r.URL.Path, 200) + " to"}, OutcomeError)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = target.Scheme, target.Host
			pr.Out.URL.Path = strings.TrimSuffix(target.Path, "/") + "/" + strings.TrimPrefix(pr.In.URL.Path, chatgptPrefix)
			pr.Out.URL.RawPath = ""
			pr.Out.Host = target.Host
		},
		Transport:     s.opt.Transport,
		FlushInterval: -1, // apps' MCP answers stream
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			x.t.Error = describeTransportError(err)
			writeError(w, &apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error",
				Message: "the ChatGPT backend could not be reached for " + truncate(r.URL.Path, 200) + ": " + x.t.Error})
		},
	}
	start := time.Now()
	rp.ServeHTTP(sw, r)
	x.t.Status, x.t.Bytes = sw.code(), sw.n
	x.t.LatencyBreakdown.UpstreamHeadersMs = stat.Ms(sw.headersAt.Sub(start))
	x.t.Outcome = OutcomeCompleted
	if x.t.Status >= 400 {
		x.t.Outcome = OutcomeFailed
	}
}

// writeJSON answers v with status, and records it.
func (x *exchange) writeJSON(status int, v any) {
	b, _ := json.Marshal(v)
	x.writeRaw(status, b)
}

// writeRaw answers the JSON body b with status, and records it.
func (x *exchange) writeRaw(status int, b []byte) {
	h := x.w.Header()
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Cache-Control", "no-store")
	x.w.WriteHeader(status)
	n, _ := x.w.Write(b)
	x.t.Status, x.t.Bytes, x.t.Outcome = status, int64(n), OutcomeCompleted
	if status >= 400 {
		x.t.Outcome = OutcomeFailed
	}
}

// statusWriter records what a passed-through answer's status and size were.
type statusWriter struct {
	http.ResponseWriter
	status    int
	n         int64
	headersAt time.Time
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status, w.headersAt = code, time.Now()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// Unwrap lets http.ResponseController reach the connection (flushes of a streamed answer).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// plainPath reports whether an escaped path's segments, decoded, are names: none is "." or
// "..", and none holds a slash or a backslash.
func plainPath(escaped string) bool {
	for _, seg := range strings.Split(escaped, "/") {
		dec, err := url.PathUnescape(seg)
		if err != nil || dec == "." || dec == ".." || strings.ContainsAny(dec, "/\\") {
			return false
		}
	}
	return true
}
