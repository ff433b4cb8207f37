package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/codexrelay/codexrelay/proxy/internal/stat"
	"github.com/codexrelay/codexrelay/proxy/payload"
	"github.com/codexrelay/codexrelay/proxy/sse"
)

// maxEventBytes bounds one upstream SSE event (a response.completed event carries the whole output).
const maxEventBytes = 64 << 20

// exchange is one client request on its way through the relay.
type exchange struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	req   *clientRequest
	t     Trace
	start time.Time
	// firstSend is when the first upstream attempt started (for upstreamHeadersMs).
	firstSend time.Time
	cache     *payload.Cache
	// catalog is the catalog this request resolved its model with (nil: none could be had).
	catalog *catalogState
	// targets are the models to try, in order (an alias may name several); target is the
	// one being tried.
	targets []string
	target  string
	// tools is the target's filtered tools override (nil: none) and toolsDropped what it removed.
	tools        *payload.Override
	toolsDropped []string
	// untranslatable counts accounts skipped because the request could not be translated.
	untranslatable int
	// cred is the credential of the latest attempt (to name it in a refresh, and to redact it
	// from what the upstream says); call is that attempt's upstream request.
	cred   Credential
	call   *call
	answer *answer // the answer to relay, once an attempt found one
	// storeDown counts attempts whose credential could not be read because the keychain is
	// unavailable; storeErr says why, with advice.
	storeDown int
	storeErr  string
	// body is the client's body as it arrived (held in bufs, as it may go upstream as it is);
	// parser validated it while it arrived; trans is its translation, made on first need.
	body   []byte
	parser payload.Parser
	stall  stallWatch // cuts a body that stalls while it is read
	trans  *translated
	// unchanged counts upstream bodies sent exactly as the client's (no serialization).
	unchanged int
	// bufs are the pooled buffers upstream bodies were built into, by their first byte.
	bufs map[*byte]*sharedBuffer
}

func (s *Server) begin(w http.ResponseWriter, r *http.Request, route string) *exchange {
	s.c.total.Add(1)
	s.c.inFlight.Add(1)
	x := &exchange{s: s, w: w, r: r, start: s.now()}
	x.t = Trace{ID: "req_" + strconv.FormatUint(s.seq.Add(1), 10), Time: x.start, Route: route, Attempts: []Attempt{}}
	return x
}

// end records the trace and the counters.
func (x *exchange) end() {
	s := x.s
	s.c.inFlight.Add(-1)
	for _, sb := range x.bufs {
		sb.release()
	}
	if x.cache != nil {
		st := x.cache.Stats()
		x.t.Serialization = Serialization{Hits: int64(st.Hits), Misses: int64(st.Misses), Direct: int64(st.Direct + x.unchanged)}
		s.c.hits.Add(x.t.Serialization.Hits)
		s.c.misses.Add(x.t.Serialization.Misses)
		s.c.direct.Add(x.t.Serialization.Direct)
	}
	x.t.LatencyBreakdown.TotalMs = stat.Ms(s.now().Sub(x.start))
	if x.t.Status >= 400 || x.t.Outcome == outcomeInterrupted || x.t.Outcome == outcomeFailed {
		s.c.errors.Add(1)
	}
	s.traces.add(x.t)
	lvl := slogLevelFor(x.t)
	s.log.Log(context.Background(), lvl, "request", "id", x.t.ID, "route", x.t.Route, "model", x.t.Model,
		"stream", x.t.Stream, "status", x.t.Status, "outcome", x.t.Outcome, "attempts", len(x.t.Attempts),
		"total_ms", x.t.LatencyBreakdown.TotalMs, "error", x.t.Error)
}

// Trace outcomes.
const (
	outcomeCompleted   = "completed"   // the answer reached the client whole
	outcomeFailed      = "failed"      // the upstream answered with a failure, relayed to the client
	outcomeInterrupted = "interrupted" // the upstream stream broke after bytes reached the client
	outcomeCanceled    = "canceled"    // the client went away
	outcomeRejected    = "rejected"    // refused before any upstream attempt (bad input, no account)
	outcomeError       = "error"       // every account failed
)

// reject answers e without having forwarded anything.
func (x *exchange) reject(e *apiError, outcome string) {
	x.t.Status, x.t.Outcome, x.t.Error = e.Status, outcome, e.Message
	writeError(x.w, e)
}

// prepared marks the end of the preparation phase.
func (x *exchange) prepared() {
	x.t.LatencyBreakdown.PreparationMs = stat.Ms(x.s.now().Sub(x.start))
}

// handleResponses serves POST /v1/responses.
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, routeResponses)
}

// serve runs a client request of either protocol: read and check it, resolve its model, and
// dispatch it to the accounts.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, route string) {
	x := s.begin(w, r, route)
	defer x.end()
	body, e := readBody(w, r, bodyLimits{s.opt.MaxBodyBytes, s.opt.BodyIdleTimeout, s.opt.BodyTimeout}, &x.stall, x.parser.Feed)
	if e != nil {
		x.reject(e, outcomeRejected)
		return
	}
	x.body = body
	x.share(body)
	req, e := parseClientRequest(route, body, r.Header, &x.parser)
	if e != nil {
		x.reject(e, outcomeRejected)
		return
	}
	x.req = req
	x.t.Model, x.t.ResolvedModel, x.t.Stream = req.model, req.model, req.stream
	if e := s.resolveModel(r.Context(), x); e != nil {
		x.reject(e, outcomeRejected)
		return
	}
	x.prepared()
	x.dispatch()
}

// dispatch tries the target models in order and, for each, the accounts that serve it, until
// one answers or all failed.
func (x *exchange) dispatch() {
	s := x.s
	x.cache = payload.NewCache()
	x.cache.Alloc = x.allocBody
	var failures []string
	tried := 0
	for _, target := range x.targets {
		x.target = target
		// The tool filtering of a target is worked out once, not per account tried.
		x.tools, x.toolsDropped = x.toolsFor(target)
		x.t.ResolvedModel = target
		cands := s.pool.candidates(target, x.req.session, s.now(), func(m *member) bool {
			return x.catalog.serves(m.Name, target)
		})
		for _, m := range cands {
			if tried > 0 && !s.pool.current(m) {
				continue // removed or disabled while this request was trying other accounts
			}
			if tried > 0 {
				s.c.rotations.Add(1)
				s.log.Info("rotating to the next account", "id", x.t.ID, "to", m.Name, "model", target, "reason", failures[len(failures)-1])
			}
			tried++
			done, reason := x.tryAccount(m)
			if done {
				return
			}
			if x.r.Context().Err() != nil {
				x.t.Status, x.t.Outcome = 499, outcomeCanceled
				return
			}
			failures = append(failures, m.Name+": "+reason)
		}
	}
	x.noAccountServed(tried, failures)
}

// noAccountServed answers a request that no account could take: why, in the OpenAI error
// shape. (Apart from dispatch, whose frame the stream's stack carries.)
//
//go:noinline
func (x *exchange) noAccountServed(tried int, failures []string) {
	s := x.s
	x.target, x.t.ResolvedModel = x.targets[0], x.targets[0]
	if x.trans != nil && x.trans.err != nil && tried == x.untranslatable {
		// Every account needed a translation, and nothing usable was left of the request.
		x.reject(errInvalid("untranslatable_request", "", "this request cannot be sent to the accounts that serve "+x.target+
			" (they speak the other API): "+x.trans.err.Error()), outcomeRejected)
		return
	}
	if x.storeDown > 0 && x.storeDown == tried {
		// Nothing an upstream or a retry can fix: say what to unlock or install.
		x.reject(&apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "keychain_unavailable",
			Message: "Codex Relay cannot read the accounts' secrets: " + x.storeErr}, outcomeError)
		return
	}
	e := s.pool.unavailable(x.t.ResolvedModel, s.now())
	if tried == 0 {
		x.reject(e, outcomeRejected)
		return
	}
	// Every candidate failed before any byte reached the client. When no account is usable any
	// more (all cooling down or signed out) the pool's answer says so and when to come back;
	// otherwise the failures were the upstreams' (a 502 the Codex CLI retries).
	if len(s.pool.candidates(x.target, "", s.now(), func(*member) bool { return true })) == 0 {
		e.Message = "every account failed: " + strings.Join(failures, "; ") + ". " + e.Message
		x.reject(e, outcomeError)
		return
	}
	x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error",
		Message: "every upstream account failed: " + strings.Join(failures, "; ")}, outcomeError)
}

// allocBody hands the serialization cache a pooled buffer for an upstream body: fresh
// megabyte allocations cost their zeroing and page faults on every request.
func (x *exchange) allocBody(n int) []byte {
	b := getBodyBuffer(n)
	x.share(b)
	return b
}

// share makes the pooled buffer b one the request holds until it ends, and the upstream
// requests sending it until their transports let go of it.
func (x *exchange) share(b []byte) {
	sb := &sharedBuffer{b: b}
	sb.refs.Store(1)
	if x.bufs == nil {
		x.bufs = make(map[*byte]*sharedBuffer, 2)
	}
	x.bufs[unsafe.SliceData(b)] = sb
}

// upstreamBody is the body for o with ov applied: the client's bytes as they arrived when
// routing changes nothing in them, else a build through the request's serialization cache.
func (x *exchange) upstreamBody(o *payload.Object, inputKey string, ov []payload.Override) []byte {
	if b, ok := payload.Unchanged(o, ov); ok {
		x.unchanged++
		return b
	}
	return x.cache.Body(o, inputKey, ov)
}

// newBody returns a function making readers of body for upstream requests. A body built into
// a pooled buffer is held until the transport closes the reader.
func (x *exchange) newBody(body []byte) func() io.ReadCloser {
	sb := x.bufs[unsafe.SliceData(body)]
	return func() io.ReadCloser {
		if sb == nil {
			return io.NopCloser(bytes.NewReader(body))
		}
		sb.refs.Add(1)
		return &bodyReader{r: bytes.NewReader(body), sb: sb}
	}
}

// verdicts of one upstream attempt.
type verdict int

const (
	served       verdict = iota // the answer went to the client
	nextAccount                 // this account cannot serve now: try the next one
	transient                   // retry once on the same account, then nextAccount
	timedOut                    // no answer in time: the next account at once, and this one rests
	unauthorized                // the credential was refused: refresh it once, else needs_login
)

// tryAccount runs the attempts on one account. It reports whether the request is finished
// (answered, or the client went away) and otherwise why the account failed.
//
// A failure before the first byte reached the client (an error status, a broken or empty
// stream, a timeout) moves the request on: a flaky one (5xx, a reset, a stream that broke) is
// tried once more on the same account, a timeout is not. Each counts as the account's failure,
// and the breaker makes an account that keeps failing rest.
func (x *exchange) tryAccount(m *member) (done bool, reason string) {
	// One body per account: a retry on the same account resends the same bytes.
	body, err := x.bodyFor(m)
	if err != nil {
		x.untranslatable++
		return false, "cannot translate the request for this account: " + err.Error()
	}
	refreshed := false
	for try := 0; try < 2; try++ {
		if try > 0 && !refreshed {
			t := time.NewTimer(x.s.opt.RetryBackoff)
			select {
			case <-x.r.Context().Done():
				t.Stop()
				return false, "client went away"
			case <-t.C:
			}
		}
		v, why, a := x.attempt(m, body)
		if a != nil {
			v, why = x.await(m, a)
		}
		switch v {
		case served:
			if x.answer != nil {
				x.respond()
			}
			if x.t.Status < 400 {
				// Only an account that produced an answer keeps the session.
				m.succeeded()
				x.s.pool.remember(x.req.session, m.key(), x.s.now())
			}
			return true, ""
		case nextAccount:
			m.failures.Add(1)
			return false, why
		case unauthorized:
			m.failures.Add(1)
			// A sign-in can be renewed: refresh once, then retry the request on this account.
			if r, ok := m.Credentials.(Refresher); ok && !refreshed {
				if _, err := r.Refresh(x.r.Context(), x.cred); err == nil {
					refreshed = true
					try--
					continue
				} else {
					why += "; refresh failed: " + redactString(err.Error(), x.cred.Token)
				}
			}
			m.markNeedsLogin(why)
			return false, why
		}
		if x.r.Context().Err() != nil {
			return false, "client went away"
		}
		m.failures.Add(1)
		if m.fail(x.s.now(), v == timedOut, why, x.s.opt.Breaker) || v == timedOut {
			return false, why
		}
		reason = why
	}
	return false, reason
}

// attempt sends the request to m once and reads the answer's status. A 2xx answer comes back
// (a) for await to look at; any other ends here, as the account's failure or, for the
// client's own mistake, relayed.
//
// The request's phases run one after the other from tryAccount (attempt, await, respond), not
// nested: net/http's first write of the answer's headers needs a deep stack, and a handler
// goroutine whose stack once grew keeps the larger size for the rest of the stream, which
// under load is a quarter of the relay's memory.
func (x *exchange) attempt(m *member, body []byte) (verdict, string, *answer) {
	s := x.s
	ctx := x.r.Context()
	start := s.now()
	if x.firstSend.IsZero() {
		x.firstSend = start
	}
	cred, err := m.Credentials.Credential(ctx)
	if err != nil {
		reason := "credential unavailable: " + err.Error()
		switch {
		case errors.Is(err, ErrNeedsLogin):
			m.markNeedsLogin(reason)
		case errors.Is(err, ErrSecretStoreUnavailable):
			x.storeDown++
			x.storeErr = err.Error()
			m.setLastError(reason)
		default:
			m.setLastError(reason)
		}
		x.record(m, start, 0, reason)
		return nextAccount, reason, nil
	}
	x.cred = cred
	m.requests.Add(1)
	wr := x.wireFor(m)
	path, upStream := "/responses", x.req.stream || m.Kind == KindChatGPT
	if wr == wireChat || wr == wireResponsesOverChat {
		path, upStream = "/chat/completions", x.req.stream
	}
	tmo := s.Timeouts()
	resp, c, err := s.send(ctx, m, cred, path, x.newBody(body), len(body), upStream, x.req.sessionHeader, tmo.Header)
	if err != nil {
		reason := describeTransportError(err, cred.Token)
		x.record(m, start, 0, reason)
		if errors.Is(err, errHeaderTimeout) {
			return timedOut, reason, nil
		}
		return transient, reason, nil
	}
	x.call = c
	if resp.StatusCode/100 != 2 {
		v, reason := x.classifyStatus(m, resp)
		x.record(m, start, resp.StatusCode, reason)
		resp.Body.Close()
		c.end()
		return v, reason, nil
	}
	return served, "", &answer{wr: wr, resp: resp, call: c, started: start, timeouts: tmo}
}

// record adds the attempt on m that began at start to the trace.
func (x *exchange) record(m *member, start time.Time, status int, err string) {
	x.t.Attempts = append(x.t.Attempts, Attempt{Account: m.Name, Status: status, Error: err, Ms: stat.Ms(x.s.now().Sub(start))})
}

// await reads a 2xx answer up to what tells whether it can be relayed: the first real event of
// a stream (the bookkeeping events before it are held back), or the whole answer when the
// client gets it whole. Nothing has reached the client yet, so any failure here (a failure
// event, a break, an empty stream, a timeout) moves the request on. Served means respond may
// relay a (x.answer); otherwise a is closed.
func (x *exchange) await(m *member, a *answer) (v verdict, reason string) {
	c, status := a.call, a.resp.StatusCode
	defer func() {
		x.record(m, a.started, status, reason)
		if v == served {
			x.t.LatencyBreakdown.UpstreamHeadersMs = stat.Ms(x.s.now().Sub(x.firstSend))
			x.answer = a
		} else {
			a.close()
		}
	}()
	broke := func(what string, err error) (verdict, string) {
		err = c.explain(err)
		if !errors.Is(err, io.EOF) && !errors.Is(err, sse.ErrTruncated) {
			what += ": " + describeTransportError(err, x.cred.Token)
		}
		if isTimeout(err) {
			return timedOut, what
		}
		return transient, what
	}
	var err error
	if !isEventStream(a.resp.Header) {
		// A plain answer is read whole before any of it is relayed.
		c.live(a.timeouts.StreamIdle)
		if a.plain, err = io.ReadAll(io.LimitReader(c.body(a.resp.Body), maxEventBytes)); err != nil {
			return broke("the upstream answer broke off", err)
		}
		return served, ""
	}
	c.arm(a.timeouts.FirstEvent, errFirstEventTimeout)
	a.rd = sse.NewReader(c.body(a.resp.Body), maxEventBytes)
	held, first, ferr := peekStream(a.rd)
	if ferr != nil {
		if len(held) == 0 {
			return broke("the upstream stream ended before its first event", ferr)
		}
		return broke("the upstream stream ended after "+held[len(held)-1].Name+", before its first output", ferr)
	}
	if isFailureEvent(first.Name) || (a.wr.chatUpstream() && isChatError(first.Data)) {
		// A 200 stream may still fail in its first event (quota, rate limit, overload).
		first.Data = redact(first.Data, x.cred.Token)
		code, msg, resetsAt := parseUpstreamError(first.Data)
		if v, reason := x.classifyCode(m, code, msg, resetsAt); v != served {
			return v, reason
		}
		first.Raw = sse.AppendEvent(nil, first.Name, first.Data)
	}
	c.live(a.timeouts.StreamIdle)
	a.held, a.first = held, first
	if !x.req.stream {
		// The client gets the answer whole: read it to its end before answering, so that a
		// break anywhere in it still moves on.
		if a.final, err = collectFinal(a.rd, first); err != nil {
			return broke("the upstream stream ended before response.completed", err)
		}
		a.whole = true
	}
	return served, ""
}

// answer is an upstream answer attempt found fit to relay, waiting for respond.
type answer struct {
	wr       wire
	resp     *http.Response
	call     *call
	started  time.Time // when the attempt began
	timeouts Timeouts
	plain    []byte // a non-streamed answer, read whole
	// A streamed answer: the reader, the bookkeeping events held back and the first real
	// event (a copy of Raw is not needed: nothing was read after it); or, for a client that
	// wants the answer whole, its terminal event.
	rd    *sse.Reader
	held  []sse.Event
	first sse.Event
	final sse.Event
	whole bool
}

func (a *answer) close() {
	a.resp.Body.Close()
	a.call.end()
}

// respond relays the answer attempt found to the client, in the client's wire.
func (x *exchange) respond() {
	a := x.answer
	defer a.close()
	switch {
	case a.rd == nil && (a.wr == wireChatOverResponses || a.wr == wireResponsesOverChat):
		x.translatePlain(a.wr, a.plain)
		return
	case a.rd == nil:
		x.relayPlain(a.resp, a.plain)
		return
	case a.whole:
		x.answerFinal(a.wr, a.final, x.cred)
		return
	}
	// A stream: the headers leave first, from this shallow frame (see attempt).
	x.startSSE(a.resp.Header)
	if http.NewResponseController(x.w).Flush() != nil {
		x.clientGone()
		return
	}
	switch {
	case a.wr == wireChat:
		x.relayChat(a.rd, a.held, a.first)
	case a.wr == wireResponsesOverChat:
		x.relayResponsesFromChat(a.rd, a.first)
	case a.wr == wireChatOverResponses:
		x.relayChatFromResponses(a.rd, a.held, a.first)
	default:
		x.relayStream(a.rd, a.held, a.first)
	}
}

// overrides are the values routing adds to the client's body for account m. They are part of
// the serialization cache's variant key, so two accounts of the same kind share one body.
func (x *exchange) overrides(m *member) []payload.Override {
	var ov []payload.Override
	if x.target != x.req.model {
		ov = append(ov, payload.Override{Key: "model", Value: payload.AppendString(nil, x.target)})
	}
	if x.tools != nil && x.wireFor(m) == wireResponses {
		ov = append(ov, *x.tools)
		for _, d := range x.toolsDropped {
			if !slices.Contains(x.t.DroppedTools, d) {
				x.t.DroppedTools = append(x.t.DroppedTools, d)
			}
		}
	}
	if m.Kind == KindChatGPT {
		// The Codex backend only takes streamed, unstored requests.
		ov = append(ov, payload.Override{Key: "store", Value: []byte("false")},
			payload.Override{Key: "stream", Value: []byte("true")})
	}
	return ov
}

// send posts body to the account. The returned call carries the request's deadlines: the
// header timeout now (10 minutes for a non-streamed request, whose headers come with the whole
// answer), then whatever the caller arms; end releases it.
func (s *Server) send(ctx context.Context, m *member, cred Credential, path string, newBody func() io.ReadCloser, size int, stream bool, session string, headerTimeout time.Duration) (*http.Response, *call, error) {
	c := newCall(ctx)
	if !stream {
		headerTimeout = nonStreamHeaderTimeout
	}
	c.arm(headerTimeout, errHeaderTimeout)
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, m.BaseURL+path, nil)
	if err != nil {
		c.end()
		return nil, nil, err
	}
	req.Body, req.ContentLength = newBody(), int64(size)
	req.GetBody = func() (io.ReadCloser, error) { return newBody(), nil }
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Authorization", "Bearer "+cred.Token)
	if stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	if session != "" {
		h.Set("session_id", session)
	}
	if m.Kind == KindChatGPT {
		if cred.AccountID != "" {
			h.Set("chatgpt-account-id", cred.AccountID)
		}
		h.Set("originator", "codex_cli_rs")
		h.Set("OpenAI-Beta", "responses=experimental")
	}
	// The transport itself, not an http.Client: the relay follows no redirects and keeps no
	// cookies, and the client's copies of the request and its headers cost on every request.
	resp, err := s.opt.Transport.RoundTrip(req)
	if err != nil {
		err = c.explain(err)
		c.end()
		return nil, nil, err
	}
	c.timer.Stop() // the caller arms what comes next
	return resp, c, nil
}

// describeTransportError says why an upstream could not be reached or broke off, in words
// that hold no secret (the error may quote what the upstream sent).
func describeTransportError(err error, secrets ...string) string {
	switch {
	case isTimeout(err):
		return err.Error()
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	msg := err.Error()
	// url.Error repeats the method and URL; the URL never holds a secret, but keep it short.
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "Post ") {
		msg = msg[i+2:]
	}
	return "upstream unreachable: " + redactString(msg, secrets...)
}

func isEventStream(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "text/event-stream")
}

// classifyStatus decides what a non-2xx upstream answer means for the account and the request.
// Answers that are the client's own mistake are relayed, redacted.
func (x *exchange) classifyStatus(m *member, resp *http.Response) (verdict, string) {
	// The upstream's text enters here: nothing of it goes further unredacted.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	body = redact(body, x.cred.Token)
	code, msg, resetsAt := parseUpstreamError(body)
	status := resp.StatusCode
	reason := fmt.Sprintf("HTTP %d", status)
	if code != "" {
		reason += " " + code
	}
	if msg != "" {
		reason += ": " + truncate(msg, 200)
	}
	now := x.s.now()
	switch {
	case status/100 == 3:
		// Never followed (the credential would go wherever it points), never relayed.
		reason = fmt.Sprintf("HTTP %d: the upstream redirects (not followed): check the account's base URL", status)
		if u, err := resp.Location(); err == nil {
			reason = fmt.Sprintf("HTTP %d: the upstream redirects to %s (not followed): check the account's base URL", status, u.Host)
		}
		m.fail(now, false, reason, x.s.opt.Breaker)
		return nextAccount, reason
	case status == http.StatusTooManyRequests || status == http.StatusPaymentRequired:
		if t := m.quotaReset(now); resetsAt == 0 && !t.IsZero() {
			resetsAt = t.Unix()
		}
		m.coolDown(cooldownEnd(now, resp.Header.Get("Retry-After"), resetsAt), reason)
		return nextAccount, reason
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return unauthorized, reason
	case status == http.StatusNotFound:
		m.blockModel(x.target, now.Add(modelBlockFor), reason)
		return nextAccount, reason
	case status == http.StatusRequestTimeout || status >= 500:
		return transient, reason
	}
	// The client's own mistake: relay it.
	x.t.Status, x.t.Outcome, x.t.Error = status, outcomeFailed, reason
	copyRelayHeaders(x.w.Header(), resp.Header)
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		x.w.Header().Set("Content-Type", ct)
	}
	x.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	x.w.WriteHeader(status)
	n, _ := x.w.Write(body)
	x.t.Bytes = int64(n)
	return served, reason
}

// errClass is what an upstream error code means for the account.
type errClass int

const (
	errClient    errClass = iota // the request's own problem (a prompt too long, say): relayed
	errQuota                     // a quota or rate limit: the account cools down, the next one serves
	errTransient                 // an overload or server error: retried, then the next account
)

// classify is the one table of upstream error codes, used for error answers and for failure
// events alike.
func classify(code string) errClass {
	switch code {
	case "rate_limit_exceeded", "usage_limit_reached", "insufficient_quota", "quota_exceeded", "usage_not_included":
		return errQuota
	case "", "server_error", "server_is_overloaded", "overloaded", "internal_error", "service_unavailable":
		return errTransient
	}
	return errClient
}

// classifyCode decides what a failure event at the start of a 200 stream means. Quota and
// rate limits cool the account down, overloads are transient, anything else (a prompt too
// long, say) is the client's and is relayed.
func (x *exchange) classifyCode(m *member, code, msg string, resetsAt int64) (verdict, string) {
	reason := "stream failed at once: " + code
	if msg != "" {
		reason += ": " + truncate(msg, 200)
	}
	switch classify(code) {
	case errQuota:
		if t := m.quotaReset(x.s.now()); resetsAt == 0 && !t.IsZero() {
			resetsAt = t.Unix()
		}
		m.coolDown(cooldownEnd(x.s.now(), "", resetsAt), reason)
		return nextAccount, reason
	case errTransient:
		return transient, reason
	}
	return served, reason
}

// cooldownEnd picks when a rate-limited account may be tried again: Retry-After (seconds or
// HTTP date), else the reset time the upstream named, else the default.
func cooldownEnd(now time.Time, retryAfter string, resetsAt int64) time.Time {
	if retryAfter != "" {
		if n, err := strconv.ParseFloat(strings.TrimSpace(retryAfter), 64); err == nil && n >= 0 {
			return now.Add(min(time.Duration(n*float64(time.Second)), maxCooldownLength))
		}
		if t, err := http.ParseTime(retryAfter); err == nil && t.After(now) {
			return minTime(t, now.Add(maxCooldownLength))
		}
	}
	if resetsAt > 0 {
		if t := time.Unix(resetsAt, 0); t.After(now) {
			return minTime(t, now.Add(maxCooldownLength))
		}
	}
	return now.Add(defaultCooldown)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// upstreamError is the error object of an upstream answer or event, in its several shapes:
// {"error":{...}}, {"response":{"error":{...}}} and a bare {"code","message"}.
type upstreamError struct {
	Code            any    `json:"code"`
	Type            string `json:"type"`
	Message         string `json:"message"`
	ResetsAt        int64  `json:"resets_at"`
	ResetsInSeconds int64  `json:"resets_in_seconds"`
}

func (e *upstreamError) code() string {
	switch c := e.Code.(type) {
	case string:
		if c != "" {
			return c
		}
	case float64:
		return strconv.FormatFloat(c, 'f', -1, 64)
	}
	if e.Type == "usage_limit_reached" || e.Type == "insufficient_quota" {
		return e.Type
	}
	return ""
}

func parseUpstreamError(body []byte) (code, msg string, resetsAt int64) {
	var v struct {
		Error    json.RawMessage `json:"error"`
		Response struct {
			Error *upstreamError `json:"error"`
		} `json:"response"`
		upstreamError
	}
	if json.Unmarshal(body, &v) != nil {
		return "", strings.TrimSpace(string(body[:min(len(body), 200)])), 0
	}
	e := &v.upstreamError
	if len(v.Error) > 0 {
		var inner upstreamError
		if json.Unmarshal(v.Error, &inner) == nil {
			e = &inner
		} else {
			var s string
			json.Unmarshal(v.Error, &s)
			e.Message = s
		}
	} else if v.Response.Error != nil {
		e = v.Response.Error
	}
	resetsAt = e.ResetsAt
	if resetsAt == 0 && e.ResetsInSeconds > 0 {
		resetsAt = time.Now().Unix() + e.ResetsInSeconds
	}
	return e.code(), e.Message, resetsAt
}

// relayHeaders are upstream headers worth passing on: request ids and the rate-limit headers
// the Codex CLI reads to show the remaining quota.
func copyRelayHeaders(dst, src http.Header) {
	for k, v := range src {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "x-codex-") || strings.HasPrefix(lk, "openai-") ||
			strings.HasPrefix(lk, "x-ratelimit-") || lk == "x-request-id" {
			dst[k] = v
		}
	}
}

// relayPlain answers a non-streamed request with the upstream's answer, read whole.
func (x *exchange) relayPlain(resp *http.Response, answer []byte) {
	h := x.w.Header()
	copyRelayHeaders(h, resp.Header)
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		h.Set("Content-Type", ct)
	}
	h.Set("Content-Length", strconv.Itoa(len(answer)))
	x.w.WriteHeader(resp.StatusCode)
	n, err := x.w.Write(answer)
	x.t.Bytes, x.t.Status = int64(n), resp.StatusCode
	if err != nil {
		x.clientGone()
		return
	}
	x.t.Outcome = outcomeCompleted
}
