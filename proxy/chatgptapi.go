package proxy

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httputil"
	"net/url"
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
//   - GET /backend-api/wham/usage answers the pool's figures (poolUsage), so that /status
//     shows what the pool can still serve and a limit is reached only when no account can
//     serve;
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

// chatgptRoutes registers the ChatGPT backend's routes on mux.
func (s *Server) chatgptRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+chatgptPrefix+"wham/usage", s.handlePoolUsage)
	mux.HandleFunc("GET "+chatgptPrefix+"wham/accounts/check", s.handleAccountsCheck)
	mux.HandleFunc(chatgptPrefix, s.handleChatGPTPassthrough)
}

// handlePoolUsage answers Codex's usage read with the pool's figures: the windows of the
// ChatGPT account that would serve next (the most headroom of those that can serve now), so
// that Codex's limit is reached only when no account can serve, and then the windows of the
// account back first. With no ChatGPT account in the pool the call goes to the backend.
func (s *Server) handlePoolUsage(w http.ResponseWriter, r *http.Request) {
	u, ok := s.poolUsage(s.now())
	if !ok {
		s.handleChatGPTPassthrough(w, r)
		return
	}
	x := s.beginChatGPT(w, r)
	defer x.end()
	x.t.Account = u.account
	x.writeJSON(http.StatusOK, u.body)
}

// handleAccountsCheck answers Codex's workspace routing discovery for the account it is
// signed in with: no routing constraint, so that its ChatGPT calls stay on chatgpt_base_url.
func (s *Server) handleAccountsCheck(w http.ResponseWriter, r *http.Request) {
	x := s.beginChatGPT(w, r)
	defer x.end()
	id := truncate(strings.TrimSpace(r.Header.Get("Chatgpt-Account-Id")), 128)
	accounts, order := []any{}, []string{}
	if id != "" {
		accounts = append(accounts, map[string]any{"id": id, "workspace_backend_origin": "NO_CONSTRAINT",
			"account_routing_override": "NO_CONSTRAINT"})
		order = append(order, id)
	}
	x.writeJSON(http.StatusOK, map[string]any{"accounts": accounts, "account_ordering": order})
}

// handleChatGPTPassthrough sends a ChatGPT backend call as it came (Codex's own credential
// included) to Options.ChatGPTBackend and relays the answer as it streams.
func (s *Server) handleChatGPTPassthrough(w http.ResponseWriter, r *http.Request) {
	x := s.beginChatGPT(w, r)
	defer x.end()
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

// beginChatGPT starts the exchange of a ChatGPT backend call.
func (s *Server) beginChatGPT(w http.ResponseWriter, r *http.Request) *exchange {
	x := s.begin(w, r, RouteChatGPT)
	x.t.Path = truncate(r.URL.Path, 200)
	return x
}

// writeJSON answers v with status, and records it.
func (x *exchange) writeJSON(status int, v any) {
	b, _ := json.Marshal(v)
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	x.w.WriteHeader(status)
	n, _ := x.w.Write(b)
	x.t.Status, x.t.Bytes, x.t.Outcome = status, int64(n), OutcomeCompleted
}

// pooledUsage is the pool's usage answer and the account whose windows it shows.
type pooledUsage struct {
	account string
	body    map[string]any
}

// poolUsage is the usage answer of the pool at now, in the backend's shape (whole numbers:
// Codex reads the window fields as integers); ok is false when the pool has no ChatGPT account.
// The windows are those of the account that can serve now with the most headroom (an account
// whose usage was not read yet counts as untouched); when none can serve, those of the
// account back first, with the limit reached. The reset credits are the pool's.
func (s *Server) poolUsage(now time.Time) (pooledUsage, bool) {
	var best, back *member
	bestScore := math.Inf(1)
	var backAt time.Time
	credits, found := 0, false
	for _, m := range s.pool.list() {
		if m.Kind != KindChatGPT {
			continue
		}
		found = true
		if q := m.quotaCopy(); q != nil && q.ResetCredits != nil && !m.Disabled {
			credits += *q.ResetCredits
		}
		if m.usable("", now) {
			if sc := m.usedScore(); sc < bestScore {
				best, bestScore = m, sc
			}
		} else if t := m.restsUntil(now); !t.IsZero() && (back == nil || t.Before(backAt)) {
			back, backAt = m, t
		}
	}
	if !found {
		return pooledUsage{}, false
	}
	serving := best != nil
	if !serving {
		best = back
	}
	rl := map[string]any{"allowed": serving, "limit_reached": !serving}
	body := map[string]any{"rate_limit": rl, "additional_rate_limits": []any{},
		"rate_limit_reset_credits": map[string]any{"available_count": credits}}
	u := pooledUsage{body: body}
	if best == nil { // every ChatGPT account is signed out or disabled
		return u, true
	}
	u.account = best.Name
	q := best.quotaCopy()
	if q == nil {
		q = &Quota{}
	}
	window := func(used float64, resets time.Time, secs int64) map[string]any {
		w := map[string]any{"used_percent": int(math.Round(min(max(used, 0), 100))), "limit_window_seconds": secs}
		if resets.After(now) {
			w["reset_after_seconds"] = int64(resets.Sub(now).Seconds())
			w["reset_at"] = resets.Unix()
		}
		return w
	}
	primaryUsed, primaryReset := q.PrimaryUsedPercent, q.PrimaryResetsAt
	if !serving {
		// Every account rests: the pool's five hours are spent until the first is back,
		// whatever limit (its window, a rate limit, an outage's rest) made it rest.
		primaryUsed, primaryReset = 100, backAt
	}
	rl["primary_window"] = window(primaryUsed, primaryReset, 5*3600)
	rl["secondary_window"] = window(q.SecondaryUsedPercent, q.SecondaryResetsAt, 7*24*3600)
	if q.PlanType != "" {
		body["plan_type"] = q.PlanType
	}
	if c := q.Credits; c != nil {
		body["credits"] = map[string]any{"has_credits": c.HasCredits, "unlimited": c.Unlimited, "balance": c.Balance}
	}
	return u, true
}

// quotaCopy is m's last usage read (nil: none yet), copied.
func (m *member) quotaCopy() *Quota {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.quota == nil {
		return nil
	}
	q := *m.quota
	return &q
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
