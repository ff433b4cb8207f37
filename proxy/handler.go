package proxy

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/proxy/internal/stat"
	"github.com/codexrelay/codexrelay/proxy/payload"
)

// A request travels the relay in four phases, one file each, read from top to bottom; each
// hands the next what it found as a value, and the exchange keeps only the client's side and
// what the request owns (its bodies and buffers, its sealed parts, its wait for the pool):
//
//	handler.go  admit: the guards, the body (body.go), the fields the relay routes on; gives
//	            the clientRequest and the client's requestBody
//	route.go    route: the model (catalog, aliases) into a plan; dispatch tries each target's
//	            accounts in order, holding for a resting pool (hold.go)
//	attempt.go  attempt: build one try an account (the wire, the body), send it, classify the
//	            answer (limit.go), move on when it failed; gives the answer and its verdict
//	respond.go  respond: relay the answer in the client's protocol, to its sink (sink.go)
//
// wire.go describes the five ways a request travels to an account and back (Responses or
// Chat Completions on each side, and a WebSocket turn to an upstream socket: socketwire.go)
// and builds each wire's body; upstream.go builds every request sent to an upstream and
// call.go bounds each call in flight. backend.go serves what Codex asks of the ChatGPT
// backend itself (web search, image generation), through the same accounts; chatgptapi.go the
// ChatGPT backend's own routes for a Codex whose chatgpt_base_url is the relay (its limits
// are the pool's).

// serveUnknown answers a route the relay does not serve, in the OpenAI error shape with what
// it serves, and names it in a trace (route "unserved"), so that what a newer Codex asks and
// the relay lacks shows in the dashboard instead of failing unseen.
func (x *exchange) serveUnknown(string) {
	s, r := x.s, x.r
	x.t.Path = truncate(r.URL.Path, 200)
	x.reject(&apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "unknown_route",
		Message: "Codex Relay has no route " + r.Method + " " + truncate(r.URL.Path, 200) + "; it serves " + s.served}, OutcomeRejected)
}

// RouteUnserved is the trace route of a request to a route the relay does not serve.
const RouteUnserved = "unserved"

// ServeHTTP applies the loopback guards and the local key, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// No answer is ever to be read as anything but what its Content-Type says (a page that
	// loads a route as a script or a style gets nothing it can use).
	w.Header().Set("X-Content-Type-Options", "nosniff")
	row, allow := s.rowOf(r)
	r, e := s.admitSigned(w, r)
	if e == nil {
		e = s.guard(r, row)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	if s.paused.Load() && row.paused {
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "relay_paused",
			Message: "Codex Relay is paused: choose Resume in its tray menu, or run `codexrelay resume`, to serve requests again"})
		return
	}
	if allow != "" {
		wrongMethod(w, r, allow)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// rowOf is the route table's row of r (routes.go) and, for a path the table serves with another
// method only, that method (the 405's Allow). Apart from
// ServeHTTP, whose frame every request's stack carries while its answer streams: the copies of
// a request it makes to ask the mux would grow every handler goroutine's stack for good.
//
//go:noinline
func (s *Server) rowOf(r *http.Request) (row *routeRow, allow string) {
	_, pattern := s.mux.Handler(r)
	row = s.rows[pattern]
	if pattern == "/" && r.URL.Path != "/" {
		// A route's path with a method it does not take: its row says who may hear the 405.
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			if _, p := s.mux.Handler(withMethod(r, m)); p != "/" {
				row, allow = s.rows[p], m
				break
			}
		}
	}
	if row == nil {
		row = s.rows["/"]
	}
	if r.Method == http.MethodHead && row.methods != nil && !slices.Contains(row.methods, http.MethodHead) {
		// The mux serves HEAD wherever it serves GET; the table says which methods a route takes.
		allow = strings.Join(row.methods, ", ")
	}
	return row, allow
}

// SetPaused pauses the relay (true) or resumes it: while paused it keeps its port and answers
// every request to an account 503 relay_paused, with how to resume, so that a client gets a
// clear answer instead of a refused connection; /health, /relay/* and /metrics still answer.
// Requests under way finish.
func (s *Server) SetPaused(on bool) {
	s.paused.Store(on)
	s.changes.Raise()
}

// guard protects the loopback port from web pages: a Host that is not a loopback name (DNS
// rebinding) and any Origin header (a browser's cross-site request) are refused. No CORS
// allowance is ever sent. Then the route's row says who may call it (routes.go): the local API
// key, when one is set, is checked in constant time (a request signed with the instance
// secret, admitSigned, needs none); a route of Codex's own sign-in never passes the local key
// on.
func (s *Server) guard(r *http.Request, row *routeRow) *apiError {
	key := s.keyHash.Load()
	if !((s.opt.AllowRemote || s.allowRemote.Load()) && key != nil) && !loopbackHost(r.Host) {
		return &apiError{Status: http.StatusForbidden, Type: "permission_error", Code: "forbidden_host",
			Message: "Codex Relay only answers requests addressed to a loopback host (127.0.0.1, localhost, [::1])"}
	}
	if r.Header.Get("Origin") != "" {
		return &apiError{Status: http.StatusForbidden, Type: "permission_error", Code: "forbidden_origin",
			Message: "Codex Relay does not answer requests from web pages (Origin header present)"}
	}
	// A browser names a request another site started (an <img> or <script> sends no Origin).
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return &apiError{Status: http.StatusForbidden, Type: "permission_error", Code: "forbidden_origin",
			Message: "Codex Relay does not answer requests from web pages (Sec-Fetch-Site: " + site + ")"}
	}
	switch row.access {
	case localKey:
		if key != nil && !InstanceSigned(r) && !isKey(&key.hash, presentedKey(r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"))) {
			return &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "invalid_api_key",
				Message: "missing or wrong local API key: send the relay's local key as a bearer token (see Settings or `codexrelay codex-config`)"}
		}
	case signIn:
		// What goes on to chatgpt.com never carries the local key, whoever sent it there.
		if key != nil {
			return scrubLocalKey(r, key.key)
		}
	}
	return nil
}

// scrubLocalKey removes from r, a request that goes on to chatgpt.com, every header value that
// carries the local key, in any header and any scheme (Bearer, Basic, none, Api-Key, a second
// X-Api-Key or Authorization); a request that carries it in its query or a cookie is refused,
// as those cannot be taken out without changing what the client meant.
func scrubLocalKey(r *http.Request, key string) *apiError {
	if inQuery(r.URL, key) {
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "local_key_in_query",
			Message: "the relay's local key is in the URL (path or query) of a request to chatgpt.com: send it as a bearer token, never in a URL"}
	}
	for name, values := range r.Header {
		kept := values[:0:0]
		for _, v := range values {
			if !carriesKey(v, key) {
				kept = append(kept, v)
				continue
			}
			if name == "Cookie" {
				return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "local_key_in_cookie",
					Message: "the relay's local key is in a cookie of a request to chatgpt.com: send it as a bearer token"}
			}
		}
		if len(kept) == 0 {
			r.Header.Del(name)
		} else if len(kept) != len(values) {
			r.Header[name] = kept
		}
	}
	return nil
}

// inQuery reports whether key is in u's path or query, as it is or escaped, in any pair (one
// badly escaped pair hides none of the others).
func inQuery(u *url.URL, key string) bool {
	if strings.Contains(u.RawQuery, key) || strings.Contains(u.Path, key) || strings.Contains(u.RawPath, key) {
		return true
	}
	for _, pair := range strings.FieldsFunc(u.RawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
		for _, part := range strings.SplitN(pair, "=", 2) {
			if v, err := url.QueryUnescape(part); err == nil && strings.Contains(v, key) {
				return true
			}
		}
	}
	return false
}

// carriesKey reports whether a header value holds key: as it is, or inside a Basic
// credential's base64.
func carriesKey(v, key string) bool {
	if strings.Contains(v, key) {
		return true
	}
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "basic") {
		return false
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		dec, err = base64.RawStdEncoding.DecodeString(strings.TrimSpace(cred))
	}
	return err == nil && strings.Contains(string(dec), key)
}

// presentedKey is the key a client presents: X-Api-Key, else a bearer token.
func presentedKey(apiKey, authorization string) string {
	if apiKey == "" && len(authorization) > 7 && strings.EqualFold(authorization[:7], "bearer ") {
		apiKey = strings.TrimSpace(authorization[7:])
	}
	return apiKey
}

// isKey reports, in constant time, whether got is the key whose digest is key.
func isKey(key *[32]byte, got string) bool {
	h := sha256.Sum256([]byte(got))
	return got != "" && subtle.ConstantTimeCompare(h[:], key[:]) == 1
}

// serveModel serves a model request of either protocol (POST /v1/responses, its compact, and
// /v1/chat/completions): read and check it, then relay it.
func (x *exchange) serveModel(string) {
	if x.admitBody(x.parseModelRequest, true) {
		x.relay()
	}
}

// parseModelRequest makes the request of a model route's body, read (and validated as it
// arrived: admitBody) by the parser.
func (x *exchange) parseModelRequest(body []byte) (*clientRequest, *apiError) {
	return parseClientRequest(x.t.Route, body, x.r.Header, &x.admit.parser)
}

// admitBody is the front door's part for the routes that take a body: the client's body read
// within the limits and the memory budget (validated by the parser as it arrives when
// validate is set), its pooled buffer held, the request made of it (parse) and admitted. It
// reports whether the request was admitted (else the client has its answer). Apart from the
// handler, whose frame every request's stack carries while its answer streams.
//
//go:noinline
func (x *exchange) admitBody(parse func([]byte) (*clientRequest, *apiError), validate bool) bool {
	s, w, r := x.s, x.w, x.r
	var feed func([]byte) error
	if validate {
		feed = x.admit.parser.Feed
	}
	body, e := readBody(w, r, bodyLimits{s.opt.MaxBodyBytes, s.opt.BodyIdleTimeout, s.opt.BodyTimeout}, &x.admit.stall, feed, x.hold)
	if e != nil {
		x.reject(e, OutcomeRejected)
		return false
	}
	x.t.ClientBytes = int64(len(body))
	// The client's bytes may go upstream as they are: the request holds their pooled buffer.
	buf := x.out.hold(body)
	req, e := parse(body)
	if e == nil {
		x.admitted(req, &clientBody{obj: req.obj, raw: body, buf: buf})
		e = x.followServed() // a request that follows a response the relay served gets its conversation
	}
	if e != nil {
		x.reject(e, OutcomeRejected)
		return false
	}
	return true
}

// admitted makes req, whose body is body (an HTTP body, or a WebSocket turn), the exchange's
// request, and names it in the trace: every route's request is admitted here.
func (x *exchange) admitted(req *clientRequest, body requestBody) {
	x.req, x.body = req, body
	x.t.Model, x.t.ResolvedModel, x.t.Stream, x.t.ServiceTier = req.model, req.model, req.stream, req.tier
	x.t.Session = req.session
	if req.route != routeDocument {
		x.t.Project = projectOf(x.turnMetadata(), req.obj)
	}
}

// exchange is one client request on its way through the relay: the client's side of it, and
// the few things the request owns while it runs. What one phase finds for the next (the plan,
// each account's try, the answer) passes as values from phase to phase (route.go, attempt.go).
type exchange struct {
	s *Server
	// The client's side: its connection and request, the trace that records it, and when it
	// began (times).
	w     http.ResponseWriter
	r     *http.Request
	req   *clientRequest
	t     Trace
	times exchangeTimes
	// body is the client's request as upstream bodies are built from it: an HTTP body
	// (clientBody) or a WebSocket turn.
	body  requestBody
	admit admission       // what read and checked an HTTP body as it arrived
	via   clientTransport // how the client came, and where a streamed answer goes

	// What the request owns while it runs, a group each:
	out    upstreamBodies // the bodies built for the accounts and the buffers they are in (body.go)
	sealed sealedParts    // what it worked out of the sealed parts it carries (sealed.go)
	// memHeld is what it holds of the relay's memory budget (memory.go).
	memHeld int64
}

// exchangeTimes are when an exchange began, when its first upstream attempt started (for
// upstreamHeadersMs; zero until then), and how it waited for a resting pool (hold.go,
// creditsrequest.go).
type exchangeTimes struct {
	start, firstSend time.Time
	wait             poolWait
}

// admission is what admits an HTTP body while it is read: parser validates it as it arrives,
// stall cuts one that stalls (body.go).
type admission struct {
	parser payload.Parser
	stall  stallWatch
}

// clientTransport is how the client came: turn is the WebSocket turn the request is (nil: an
// HTTP request), and events where a streamed answer goes (sink.go): the turn's socket, else the
// HTTP stream made on first need.
type clientTransport struct {
	turn   *socketTurn
	events eventSink
}

// begin is the one front door of an exchange: every request the relay serves as an exchange
// (a route's row with a route, and each turn of a client's WebSocket) begins here, its trace
// named by the row. Codex's own ChatGPT calls (Trace.Background) do not count among the
// requests.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, row *routeRow) *exchange {
	x := &exchange{s: s, w: w, r: r, times: exchangeTimes{start: s.now()}}
	x.t = Trace{ID: "req_" + strconv.FormatUint(s.seq.Add(1), 10), Time: x.times.start, Route: row.route, Attempts: []Attempt{}, Transport: TransportHTTP}
	if !x.t.Background() {
		s.c.total.Add(1)
	}
	s.c.inFlight.Add(1)
	s.changes.Raise()
	return x
}

// clientRequest is a parsed client body: the top-level members as raw bytes plus the few
// fields the relay routes on. The large input or messages array is never decoded.
type clientRequest struct {
	route   string // "responses", "chat", "compact" or "document"
	path    string // a document's path under the account's base URL (/alpha/search, ...)
	obj     *payload.Object
	model   string
	stream  bool
	session string // affinity key: prompt_cache_key, else the session-id header
	// sessionHeader is the client's session-id/session_id header, sent upstream as session_id.
	sessionHeader string
	// tier is the service tier the client asked for (tier.go: "priority" for "fast", "" none).
	tier string
}

// parseClientRequest validates the fields the relay relies on. Anything else in the body is
// the upstream's business and goes through untouched. p is the parser that saw the body
// arrive (nil: parse it now).
func parseClientRequest(route string, body []byte, h http.Header, p *payload.Parser) (*clientRequest, *apiError) {
	if p == nil {
		p = new(payload.Parser)
	}
	obj, err := p.Finish(body)
	if err != nil {
		return nil, errInvalid("invalid_json", "", "the request body is not a valid JSON object: "+err.Error())
	}
	return clientFields(route, obj, h)
}

// clientFields reads and checks the fields the relay routes on from a parsed client body.
func clientFields(route string, obj *payload.Object, h http.Header) (*clientRequest, *apiError) {
	var err error
	req := &clientRequest{route: route, obj: obj}
	f := routingMembers(route, obj)
	raw := f.model
	if raw == nil {
		return nil, errInvalid("missing_required_parameter", "model", "'model' is required")
	}
	if payload.KindOf(raw) != payload.KindString {
		return nil, errInvalid("invalid_type", "model", "'model' must be a string, got "+payload.KindOf(raw).String())
	}
	if len(raw) > maxModelName+2 {
		return nil, errInvalid("invalid_value", "model", fmt.Sprintf("'model' is longer than %d characters", maxModelName))
	}
	if req.model, err = payload.DecodeString(raw); err != nil || req.model == "" {
		return nil, errInvalid("invalid_value", "model", "'model' must be a non-empty string")
	}
	if raw := f.stream; raw != nil {
		switch payload.KindOf(raw) {
		case payload.KindTrue:
			req.stream = true
		case payload.KindFalse, payload.KindNull:
		default:
			return nil, errInvalid("invalid_type", "stream", "'stream' must be a boolean, got "+payload.KindOf(raw).String())
		}
	}
	if route == routeCompact && req.stream {
		// The compaction is one document (compactv1.go): a stream of it has no events to send.
		return nil, errInvalid("unsupported_parameter", "stream",
			"'stream' is not supported by /v1/responses/compact: the compacted conversation is answered whole; send stream false or leave it out")
	}
	bigKey := "input"
	if route == routeChat {
		bigKey = "messages"
	}
	if raw := f.big; raw != nil {
		k := payload.KindOf(raw)
		if route == routeChat && k != payload.KindArray {
			return nil, errInvalid("invalid_type", bigKey, "'messages' must be an array, got "+k.String())
		}
		if k != payload.KindArray && k != payload.KindString {
			return nil, errInvalid("invalid_type", bigKey, "'input' must be a string or an array, got "+k.String())
		}
	} else if route == routeChat {
		return nil, errInvalid("missing_required_parameter", "messages", "'messages' is required")
	}
	req.sessionHeader = h.Get("Session-Id")
	if req.sessionHeader == "" {
		req.sessionHeader = h.Get("Session_id")
	}
	if raw := f.cacheKey; payload.KindOf(raw) == payload.KindString {
		req.session, _ = payload.DecodeString(raw)
	}
	if req.session == "" {
		req.session = req.sessionHeader
	}
	req.session = sessionKey(req.session)
	req.tier = requestedTier(f.tier, f.tier != nil)
	return req, nil
}

// routedMembers are the raw values of the members the relay routes on (nil: absent).
type routedMembers struct{ model, stream, big, cacheKey, tier []byte }

// routingMembers finds the members the relay routes on in one walk over the members the
// parse split, rather than a look-up each: model, stream, the large array (input, or
// messages for Chat), prompt_cache_key and service_tier.
func routingMembers(route string, obj *payload.Object) routedMembers {
	var f routedMembers
	for i := range obj.Members {
		m := &obj.Members[i]
		switch m.Key {
		case "model":
			f.model = m.Value
		case "stream":
			f.stream = m.Value
		case "input":
			if route != routeChat {
				f.big = m.Value
			}
		case "messages":
			if route == routeChat {
				f.big = m.Value
			}
		case "prompt_cache_key":
			f.cacheKey = m.Value
		case "service_tier":
			f.tier = m.Value
		}
	}
	return f
}

// maxModelName bounds a model name (real ones are far shorter).
const maxModelName = 256

const (
	routeResponses = "responses"
	routeChat      = "chat"
	routeCompact   = "compact"  // POST /v1/responses/compact: a Responses body, answered whole
	routeDocument  = "document" // a backend call (backend.go): a body that goes as it came, answered whole
)

// reject answers e without having forwarded anything.
func (x *exchange) reject(e *apiError, outcome string) {
	x.t.Status, x.t.Outcome, x.t.Error = e.Status, outcome, e.Message
	writeError(x.w, e)
}

// end records the trace and the counters.
func (x *exchange) end() {
	s := x.s
	if s.c.inFlight.Add(-1) == 0 {
		s.idle()
	}
	x.out.release()
	x.releaseMemory()
	if x.out.cache != nil {
		st := x.out.cache.Stats()
		x.t.Serialization = Serialization{Hits: int64(st.Hits), Misses: int64(st.Misses), Direct: int64(st.Direct + x.out.unchanged)}
		s.c.hits.Add(x.t.Serialization.Hits)
		s.c.misses.Add(x.t.Serialization.Misses)
		s.c.direct.Add(x.t.Serialization.Direct)
	}
	x.t.LatencyBreakdown.TotalMs = stat.Ms(s.now().Sub(x.times.start))
	s.c.sealedOmitted.Add(int64(x.t.SealedOmitted))
	if x.t.SealedRetry {
		s.c.sealedRetries.Add(1)
	}
	if x.t.ServiceTierOmitted {
		s.c.tierOmitted.Add(1)
	}
	if (x.t.Status >= 400 || x.t.Outcome == OutcomeInterrupted || x.t.Outcome == OutcomeFailed) && !x.t.Background() {
		s.c.errors.Add(1)
	}
	s.traces.add(x.t)
	s.changes.Raise()
	if x.t.Usage != nil {
		s.tokens.add(x.t.Account, x.t.ResolvedModel, x.t.Usage)
	}
	if hook := s.traceHook.Load(); hook != nil {
		(*hook)(x.t)
	}
	lvl := slogLevelFor(x.t)
	s.log.Log(context.Background(), lvl, "request", "id", x.t.ID, "route", x.t.Route, "model", x.t.Model,
		"stream", x.t.Stream, "status", x.t.Status, "outcome", x.t.Outcome, "attempts", len(x.t.Attempts),
		"total_ms", x.t.LatencyBreakdown.TotalMs, "error", x.t.Error)
}

// Trace outcomes (Trace.Outcome): how a request ended.
const (
	OutcomeCompleted   = "completed"   // the answer reached the client whole
	OutcomeFailed      = "failed"      // the upstream answered with a failure, relayed to the client
	OutcomeInterrupted = "interrupted" // the upstream stream broke after bytes reached the client
	OutcomeCanceled    = "canceled"    // the client went away
	OutcomeRejected    = "rejected"    // refused before any upstream attempt (bad input, no account)
	OutcomeError       = "error"       // every account failed
)

// loopbackHost reports whether a Host header names this machine's loopback interface.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
func withMethod(r *http.Request, method string) *http.Request {
	r2 := *r
	r2.Method = method
	return &r2
}

func wrongMethod(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Code: "method_not_allowed",
		Message: "method " + r.Method + " is not allowed on " + truncate(r.URL.Path, 200) + "; use " + allow})
}
