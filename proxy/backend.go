package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/proxy/internal/stat"
)

// Backend calls: what Codex asks of the ChatGPT backend itself, not of a model. Code mode's
// web namespace (web.run) posts a search to {base}/alpha/search, and image_gen.imagegen posts
// to {base}/images/generations or /images/edits (an edit carries its images inline as data
// URLs). Codex 0.171 sends them to its provider's base_url when the provider block says
// supports_standalone_web_search (search) and requires_openai_auth with a ChatGPT sign-in
// (images): app/codex.go writes both. The relay sends the client's body as it came to a
// healthy ChatGPT account, the account that serves the conversation first, and moves to the
// next one on a limit, a refused credential or an outage before any byte reached the client,
// as a model request does. The answer (one JSON document) is relayed as it came.
//
// Only ChatGPT accounts serve these: an API key's upstream has no search of this shape, and
// its Images API is billed per image rather than from the plan.

// Backend call routes (Trace.Route).
const (
	RouteSearch = "search"
	RouteImages = "images"
)

// backendCalls are the backend paths the relay serves, each under /v1 and bare, by route.
var backendCalls = []struct{ path, route string }{
	{"/alpha/search", RouteSearch},
	{"/images/generations", RouteImages},
	{"/images/edits", RouteImages},
}

// maxBackendAnswer bounds a backend call's answer (an image comes back as base64 in JSON).
const maxBackendAnswer = 64 << 20

// handleBackend serves one backend call (path, e.g. /alpha/search) as route.
func (s *Server) handleBackend(path, route string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		x := s.begin(w, r, route)
		defer x.end()
		body, e := readBody(w, r, bodyLimits{s.opt.MaxBodyBytes, s.opt.BodyIdleTimeout, s.opt.BodyTimeout}, &x.admit.stall, nil)
		if e != nil {
			x.reject(e, OutcomeRejected)
			return
		}
		defer putBodyBuffer(body)
		x.t.ClientBytes = int64(len(body))
		if !json.Valid(body) {
			x.reject(errInvalid("invalid_json", "", "the request body is not valid JSON"), OutcomeRejected)
			return
		}
		x.t.Model = backendModel(body)
		x.t.ResolvedModel = x.t.Model
		x.t.Session = turnThread(r.Header.Get("X-Codex-Turn-Metadata"))
		x.t.LatencyBreakdown.PreparationMs = stat.Ms(s.now().Sub(x.times.start))
		x.backendCall(path, body)
	}
}

// backendCall tries the ChatGPT accounts in order until one answers.
func (x *exchange) backendCall(path string, body []byte) {
	s := x.s
	isChatGPT := func(m *member) bool { return m.Kind == KindChatGPT }
	cands := s.pool.candidates("", x.t.Session, s.now(), isChatGPT)
	if len(cands) == 0 {
		x.reject(x.noBackendAccount(), OutcomeRejected)
		return
	}
	var failures []string
	for i, m := range cands {
		if i > 0 {
			if !s.pool.current(m) || !m.usable("", s.now()) {
				continue // removed, or rested meanwhile (a workspace's limit: restWorkspace)
			}
			s.c.rotations.Add(1)
			s.log.Info("rotating to the next account", "id", x.t.ID, "to", m.Name, "route", x.t.Route, "reason", failures[len(failures)-1])
		}
		m.requests.Add(1)
		done, why := x.backendTry(m, path, body)
		if done {
			return
		}
		if x.r.Context().Err() != nil {
			x.t.Status, x.t.Outcome = 499, OutcomeCanceled
			return
		}
		failures = append(failures, m.Name+": "+why)
	}
	e := &apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error",
		Message: "every ChatGPT account failed this " + x.t.Route + ": " + strings.Join(failures, "; ")}
	if !s.pool.anyUsableOf(s.now(), isChatGPT) {
		e = x.noBackendAccount()
		e.Message = "every ChatGPT account failed this " + x.t.Route + ": " + strings.Join(failures, "; ") + ". " + e.Message
	}
	x.reject(e, OutcomeError)
}

// backendTry sends the call to m, renewing a refused sign-in once. done: the client has its
// answer (the upstream's, or its own mistake); otherwise why m could not serve.
func (x *exchange) backendTry(m *member, path string, body []byte) (done bool, why string) {
	s, ctx := x.s, x.r.Context()
	for renewed := false; ; renewed = true {
		start := s.now()
		if x.times.firstSend.IsZero() {
			x.times.firstSend = start
		}
		cred, err := m.Credentials.Credential(ctx)
		m.sawCredential(cred)
		if err != nil {
			why = "credential unavailable: " + err.Error()
			if errors.Is(err, ErrNeedsLogin) {
				m.markNeedsLogin(why)
			} else {
				m.setLastError(why)
			}
			x.record(m, start, 0, why)
			return false, why
		}
		newBody := func() io.ReadCloser { return io.NopCloser(bytes.NewReader(body)) }
		resp, c, err := s.send(ctx, m, cred, path, newBody, len(body), false, x.backendHeaders(), 0)
		x.t.UpstreamBytes += int64(len(body))
		if err != nil {
			why = describeTransportError(err, cred.Token)
			x.record(m, start, 0, why)
			m.failures.Add(1)
			m.fail(s.now(), isTimeout(err), why, s.opt.Breaker)
			return false, why
		}
		c.live(s.Timeouts().StreamIdle)
		answer, rerr := io.ReadAll(io.LimitReader(c.body(resp.Body), maxBackendAnswer+1))
		resp.Body.Close()
		c.end()
		if rerr == nil && len(answer) > maxBackendAnswer {
			rerr = fmt.Errorf("the answer is larger than %d MiB", maxBackendAnswer>>20)
		}
		if rerr != nil {
			why = "the upstream answer broke off: " + describeTransportError(rerr, cred.Token)
			x.record(m, start, resp.StatusCode, why)
			m.failures.Add(1)
			m.fail(s.now(), isTimeout(rerr), why, s.opt.Breaker)
			return false, why
		}
		// The upstream's text enters here: nothing of it goes further unredacted.
		answer = redact(answer, cred.Token)
		status := resp.StatusCode
		if status/100 == 2 {
			x.record(m, start, status, "")
			x.backendAnswer(m, resp, answer)
			return true, ""
		}
		code, msg, resetsAt := parseUpstreamError(answer)
		why = fmt.Sprintf("HTTP %d", status)
		if code != "" {
			why += " " + code
		}
		if msg != "" {
			why += ": " + truncate(msg, 200)
		}
		x.record(m, start, status, why)
		now := s.now()
		switch {
		case status == http.StatusUnauthorized || status == http.StatusForbidden && classify(code) != errQuota:
			m.failures.Add(1)
			if r, ok := m.Credentials.(Refresher); ok && !renewed {
				if _, err := r.Refresh(ctx, cred); err == nil {
					continue
				}
			}
			m.markNeedsLogin(why)
			return false, why
		case status == http.StatusTooManyRequests || status == http.StatusPaymentRequired || classify(code) == errQuota:
			s.restForLimit(m, cred, code, resp.Header.Get("Retry-After"), resetsAt, why)
			m.failures.Add(1)
			return false, why
		case status/100 == 3 || status == http.StatusNotFound || status == http.StatusRequestTimeout || status >= 500:
			// An outage, or an account whose backend has no such route: the next one may.
			m.failures.Add(1)
			m.fail(now, false, why, s.opt.Breaker)
			return false, why
		}
		// The client's own mistake (a prompt the backend refuses, say): relayed as it came.
		x.t.Error = why
		x.backendAnswer(m, resp, answer)
		return true, ""
	}
}

// backendAnswer relays m's answer: its status and body, with the headers that describe it.
func (x *exchange) backendAnswer(m *member, resp *http.Response, answer []byte) {
	s := x.s
	h := x.w.Header()
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = "application/json"
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Length", fmt.Sprint(len(answer)))
	x.w.WriteHeader(resp.StatusCode)
	n, _ := x.w.Write(answer)
	x.t.Bytes = int64(n)
	x.t.Status, x.t.Account = resp.StatusCode, m.Name
	x.t.Outcome = OutcomeCompleted
	if resp.StatusCode >= 400 {
		x.t.Outcome = OutcomeFailed
		return
	}
	x.t.LatencyBreakdown.UpstreamHeadersMs = stat.Ms(s.now().Sub(x.times.firstSend))
	m.succeeded()
	if x.t.Session != "" {
		s.pool.remember(x.t.Session, m.key(), s.now())
	}
}

// backendHeaders are the client's headers that go with a backend call, by the rule model
// requests follow (turn.go): the turn's metadata, the image turn id and the like.
func (x *exchange) backendHeaders() http.Header {
	h := http.Header{}
	conn := x.r.Header.Get("Connection")
	for k, v := range x.r.Header {
		if forwarded(k, conn) {
			h[k] = v
		}
	}
	return h
}

// noBackendAccount is the answer when no ChatGPT account can take a backend call now.
func (x *exchange) noBackendAccount() *apiError {
	s := x.s
	what := map[string]string{RouteSearch: "Web search", RouteImages: "Image generation"}[x.t.Route]
	isChatGPT := func(m *member) bool { return m.Kind == KindChatGPT }
	found := false
	for _, m := range s.pool.list() {
		found = found || isChatGPT(m)
	}
	now := s.now()
	back := s.pool.backAt(now, isChatGPT)
	switch {
	case !found:
		return &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Code: "no_chatgpt_account",
			Message: what + " goes to a ChatGPT account, and Codex Relay has none: add one with `codexrelay accounts add --kind chatgpt`"}
	case !back.IsZero():
		e := &apiError{Status: http.StatusTooManyRequests, Type: "usage_limit_reached", Code: "usage_limit_reached",
			Message: what + " goes to a ChatGPT account, and every one is resting until " + back.Local().Format("15:04"), ResetsAt: back.Unix()}
		if d := back.Sub(now); d > 0 {
			e.RetryAfter = int(d.Seconds()) + 1
		}
		return e
	}
	return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "no_account_available",
		Message: what + " goes to a ChatGPT account, and none can serve now (signed out or disabled): see `codexrelay accounts list`"}
}

// anyUsableOf reports whether an account that serves passes may take a request now.
func (p *pool) anyUsableOf(now time.Time, serves func(*member) bool) bool {
	for _, m := range p.list() {
		if serves(m) && m.usable("", now) {
			return true
		}
	}
	return false
}

// backendModel is the model a backend call names ("" for none).
func backendModel(body []byte) string {
	var v struct {
		Model string `json:"model"`
	}
	json.Unmarshal(body, &v)
	return truncate(v.Model, maxModelName)
}

// turnThread is the thread id of Codex's x-codex-turn-metadata: the conversation a backend
// call belongs to, whose account is tried first.
func turnThread(meta string) string {
	if meta == "" || len(meta) > 64<<10 {
		return ""
	}
	var v struct {
		ThreadID string `json:"thread_id"`
	}
	json.Unmarshal([]byte(meta), &v)
	return truncate(v.ThreadID, 256)
}
