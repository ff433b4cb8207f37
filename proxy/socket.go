package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/codexrelay/codexrelay/proxy/bridge"
	"github.com/codexrelay/codexrelay/proxy/payload"
)

// The Responses API over a WebSocket, as the Codex CLI speaks it with supports_websockets:
// GET /v1/responses with Upgrade: websocket, then JSON text frames {"type":"response.create",
// ...} from the client, each answered with the events of one response, one JSON event per text
// frame, exactly as the SSE stream would carry them.
//
// Each turn runs as an ordinary request through the four phases (handler, route, attempt,
// respond): the socket is only another way in and out. What the socket adds is the
// conversation: after its first turn the client sends only the new input items and the id of
// the response they follow, so the relay keeps the conversation (conversation.go) to replay it
// whole to an account reached over HTTP, or to any account after a rotation. An account whose
// upstream speaks WebSocket gets one upstream socket per client connection and, while the
// conversation stays on it, only the new items (socketwire.go).

// SocketBeta is the OpenAI-Beta value of the WebSocket transport the Codex CLI sends and the
// upstreams expect.
const SocketBeta = "responses_websockets=2026-02-06"

// Transports a trace names.
const (
	TransportHTTP      = "http"
	TransportWebSocket = "websocket"
)

// socketRoute is the WebSocket route: each turn of a socket is an exchange of the row's.
func socketRoute(s *Server, row *routeRow, _ string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.handleResponsesSocket(w, r, row) })
}

// handleResponsesSocket serves GET /v1/responses: the WebSocket transport. The loopback
// guards and the local key have been applied (ServeHTTP) before the upgrade.
func (s *Server) handleResponsesSocket(w http.ResponseWriter, r *http.Request, row *routeRow) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Code: "method_not_allowed",
			Message: "method GET is not allowed on " + truncate(r.URL.Path, 200) + "; use POST, or GET with Upgrade: websocket for the WebSocket transport"})
		return
	}
	// A bound on the sockets open at once: each holds a goroutine pair, buffers and a
	// conversation.
	if n := s.c.sockets.Load(); n >= int64(s.opt.MaxSockets) {
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "too_many_sockets",
			Message: fmt.Sprintf("Codex Relay has %d WebSockets open, its limit: close one, or use HTTP (POST /v1/responses)", n)})
		return
	}
	// The Origin check is the guard's (any Origin is refused before this point).
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept has answered the client
	}
	c.SetReadLimit(s.opt.MaxBodyBytes)
	sc := &socketConn{s: s, row: row, c: c, header: r.Header.Clone(), drained: make(chan struct{})}
	sc.ctx, sc.cancel = context.WithCancel(r.Context())
	sc.conv = newConversation(s.convBudget())
	sc.serve()
}

// socketConn is one client WebSocket connection.
type socketConn struct {
	s      *Server
	row    *routeRow // the route its turns are exchanges of
	c      *websocket.Conn
	ctx    context.Context // cancelled when the client leaves or the relay stops
	cancel context.CancelFunc
	header http.Header // the upgrade request's headers (the session id)
	conv   *conversation
	// up is the connection's upstream socket, to the account that served its last turn over
	// WebSocket (nil: none open).
	up *upstreamSocket
	// lastID is the id of the last response that completed (the conversation keeps the
	// parameters response.append continues it with).
	lastID string
	// drained is closed when the relay stops: the connection closes after its current turn.
	drained   chan struct{}
	drainOnce sync.Once
	// busy says that a turn is running (the idle limit between turns does not count it).
	busy atomic.Bool
	// running is the turn being served (nil between turns): a response.interrupt read while
	// it runs stops it at once (interrupt.go).
	running atomic.Pointer[socketTurn]
}

type frame struct {
	typ  websocket.MessageType
	data []byte
	// held is what the frame holds of the relay-wide budget of frames being read or waiting
	// (released once it is answered).
	held int64
}

// Socket limits: the longest silence between a client's frames while no turn runs (the first
// frame must come sooner), and the budget step frames are read in.
const (
	defaultSocketIdle = 15 * time.Minute
	firstFrameWait    = time.Minute
	frameStep         = 64 << 10
)

// readFrame reads the client's next frame into memory taken from the relay-wide budget of
// frames being read (Options.SocketReadBudget): a socket whose frame would exceed it is closed
// with 1013 (try again later), one silent past the idle limit between turns with 1001, and a
// frame that stalls (no byte for BodyIdleTimeout) or trickles past BodyTimeout with 1008, as
// an HTTP body would get 408.
func (sc *socketConn) readFrame(first bool) (frame, error) {
	s := sc.s
	wait := s.opt.SocketIdle
	if first {
		wait = min(wait, firstFrameWait)
	}
	var idle atomic.Pointer[time.Timer]
	idle.Store(time.AfterFunc(wait, func() {
		if sc.busy.Load() {
			idle.Load().Reset(wait) // a turn is running: its end starts the wait
			return
		}
		sc.c.Close(websocket.StatusGoingAway, "idle: no request for "+wait.String())
	}))
	typ, rd, err := sc.c.Reader(sc.ctx)
	idle.Load().Stop()
	if err != nil {
		return frame{}, err
	}
	stall := time.AfterFunc(s.opt.BodyIdleTimeout, func() {
		sc.c.Close(websocket.StatusPolicyViolation, "the frame stalled: no byte for "+s.opt.BodyIdleTimeout.String())
	})
	whole := time.AfterFunc(s.opt.BodyTimeout, func() {
		sc.c.Close(websocket.StatusPolicyViolation, "the frame took longer than "+s.opt.BodyTimeout.String())
	})
	defer stall.Stop()
	defer whole.Stop()
	f := frame{typ: typ}
	for {
		if len(f.data) == cap(f.data) {
			// Doubling, a step at least; each buffer counts until the frame is answered, the
			// ones it outgrew too, so that the budget bounds what reading allocated.
			grown := int64(2*cap(f.data) + frameStep)
			if s.frameBytes.Add(grown) > s.opt.SocketReadBudget {
				others := s.frameBytes.Add(-grown) - f.held
				sc.release(f)
				if others <= 0 {
					// Alone, it still does not fit: waiting would not help (1009, not 1013).
					sc.c.Close(websocket.StatusMessageTooBig, "the frame is larger than the relay reads")
				} else {
					sc.c.Close(websocket.StatusTryAgainLater, "the relay is reading too many frames at once")
				}
				return frame{}, errFrameBudget
			}
			f.held += grown
			f.data = slices.Grow(f.data, int(grown)-len(f.data))
		}
		n, err := rd.Read(f.data[len(f.data):cap(f.data)])
		f.data = f.data[:len(f.data)+n]
		if n > 0 {
			stall.Reset(s.opt.BodyIdleTimeout)
		}
		if err == io.EOF {
			return f, nil
		}
		if err != nil {
			sc.release(f)
			return frame{}, err
		}
	}
}

// release gives a frame's memory back to the budget.
func (sc *socketConn) release(f frame) { sc.s.frameBytes.Add(-f.held) }

var errFrameBudget = errors.New("the relay's budget of frames being read is spent")

// serve reads the client's frames and answers them one turn at a time, until the client
// closes or the relay stops. A read goroutine watches the socket while a turn runs, so that a
// client that leaves cancels its upstream request at once.
func (sc *socketConn) serve() {
	s := sc.s
	s.c.sockets.Add(1)
	s.changes.Raise()
	s.sockets.Store(sc, struct{}{})
	defer func() {
		if p := recover(); p != nil {
			// A bug in a turn closes this connection (1011), not the relay.
			s.log.Error("websocket turn panicked", "panic", fmt.Sprint(p))
			sc.c.Close(websocket.StatusInternalError, "internal error in the relay")
		}
		sc.c.CloseNow()
		s.sockets.Delete(sc)
		s.c.sockets.Add(-1)
		s.changes.Raise()
		sc.cancel()
		sc.conv.close()
		if sc.up != nil {
			sc.up.close()
		}
	}()
	frames := make(chan frame, 4)
	go func() {
		defer close(frames)
		for first := true; ; first = false {
			f, err := sc.readFrame(first)
			if err != nil {
				sc.cancel() // the client left, or was cut (a frame over the size limit: 1009)
				return
			}
			if sc.control(f) { // an interrupt or a steer for the running turn (interrupt.go)
				sc.release(f)
				continue
			}
			select {
			case frames <- f:
			case <-sc.ctx.Done():
				sc.release(f)
				return
			}
		}
	}()
	defer func() {
		for f := range frames { // left unanswered
			sc.release(f)
		}
	}()
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				return
			}
			sc.busy.Store(true)
			sc.handle(f)
			sc.release(f)
			sc.busy.Store(false)
			continue
		case <-sc.drained:
		}
		sc.c.Close(websocket.StatusGoingAway, "the relay is stopping")
		return
	}
}

// drain closes the connection after its current turn (the relay stops).
func (sc *socketConn) drain() { sc.drainOnce.Do(func() { close(sc.drained) }) }

// handle answers one client frame with exactly one terminal event.
func (sc *socketConn) handle(f frame) {
	if f.typ != websocket.MessageText {
		sc.sendError(errInvalid("invalid_frame", "", "binary frames are not supported: send each request as one JSON text frame"))
		return
	}
	obj, err := payload.Parse(f.data)
	if err != nil {
		sc.sendError(errInvalid("invalid_json", "", "the frame is not a valid JSON object: "+err.Error()))
		return
	}
	typ, _ := stringMember(obj, "type")
	switch typ {
	case "response.create":
		sc.create(obj, len(f.data))
	case "response.append":
		sc.appendTurn(obj, len(f.data))
	case "response.processed":
		// Newer Codex builds acknowledge each turn they have handled; nothing is answered.
	case frameInterrupt:
		// No turn runs (it ended before the frame came): nothing to stop, nothing answered.
	case frameSteer, frameInject:
		sc.sendError(errInvalid("no_active_response", "type", typ+" reaches a response the account generates over its WebSocket, and none was: "+
			"the turn had ended, or the relay served it over HTTP"))
	default:
		sc.sendError(errInvalid("unknown_event_type", "type", fmt.Sprintf("unknown frame type %q: send response.create", truncate(typ, 64))))
	}
}

// create runs a response.create frame: a warm-up, or a turn that follows the conversation
// from previous_response_id (none: a conversation of its own input).
func (sc *socketConn) create(obj *payload.Object, size int) {
	prev, ok := stringMember(obj, "previous_response_id")
	if raw, has := obj.Get("previous_response_id"); has && !ok && payload.KindOf(raw) != payload.KindNull {
		sc.sendError(errInvalid("invalid_type", "previous_response_id", "'previous_response_id' must be a string"))
		return
	}
	var base [][]byte
	keepPrev := false
	if prev != "" {
		if base, ok = sc.conv.upTo(prev); !ok {
			// A response this connection never saw. One the upstream stored (store is not
			// false) may be known there: the turn goes up with previous_response_id and the
			// upstream answers. Without storage nobody can know it: the upstream's error.
			if raw, _ := obj.Get("store"); payload.KindOf(raw) == payload.KindFalse {
				sc.sendError(&apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "previous_response_not_found",
					Param: "previous_response_id", Message: fmt.Sprintf("Previous response with id '%s' not found.", truncate(prev, 100))})
				return
			}
			keepPrev = true
		}
	}
	var input [][]byte
	if raw, has := obj.Get("input"); has {
		k := payload.KindOf(raw)
		if k != payload.KindArray && k != payload.KindString {
			sc.sendError(errInvalid("invalid_type", "input", "'input' must be a string or an array, got "+k.String()))
			return
		}
		input, _ = inputItems(raw)
	}
	t := &socketTurn{sc: sc, obj: obj, prev: prev, base: base, input: input, keepPrev: keepPrev, metadata: clientMetadata(obj)}
	if raw, has := obj.Get("generate"); has && payload.KindOf(raw) == payload.KindFalse {
		sc.warmUp(t)
		return
	}
	sc.run(t, size)
}

// withoutInput is a copy of a response.create frame's parameters, without its input: what
// response.append needs of it, in memory of its own (the frame, input and all, is let go).
func withoutInput(obj *payload.Object) *payload.Object {
	o, err := payload.Parse(payload.Build(nil, obj, []payload.Override{{Key: "input"}}))
	if err != nil {
		panic("proxy: a frame's parameters do not parse: " + err.Error()) // built from parsed parts
	}
	return o
}

// appendTurn runs a response.append frame: its input items continue the last completed
// response, with the parameters of the last response.create.
func (sc *socketConn) appendTurn(obj *payload.Object, size int) {
	params := sc.conv.lastParams()
	if params == nil || sc.lastID == "" {
		sc.sendError(errInvalid("no_previous_response", "", "response.append continues the last response of this connection, and none has completed yet: send response.create"))
		return
	}
	input, _ := obj.Get("input")
	if input == nil {
		input = []byte("[]")
	}
	b := payload.Build(nil, params, []payload.Override{
		{Key: "type", Value: []byte(`"response.create"`)},
		{Key: "input", Value: input},
		{Key: "previous_response_id", Value: payload.AppendString(nil, sc.lastID)},
		{Key: "generate", Value: nil},
	})
	o, err := payload.Parse(b)
	if err != nil {
		sc.sendError(errInvalid("invalid_json", "input", "response.append's input is not valid: "+err.Error()))
		return
	}
	sc.create(o, size)
}

// warmUp answers a generate:false frame without an upstream request: it only prepares the
// conversation (instructions, tools, the input so far), which the relay keeps itself; the
// response it answers is the one the next turn follows.
func (sc *socketConn) warmUp(t *socketTurn) {
	id := "resp_" + runID + "_warmup_" + strconv.FormatUint(sc.s.seq.Add(1), 10)
	model, _ := stringMember(t.obj, "model")
	now := sc.s.now().Unix()
	r := &bridge.Response{ID: id, Model: model, CreatedAt: now, Status: "in_progress", Echo: bridge.NewEcho(t.obj.Get)}
	t.params = withoutInput(t.obj)
	sc.send(bridge.ResponseEvent("response.created", 0, r))
	r.Status, r.CompletedAt, r.Usage = "completed", now, zeroUsage
	sc.send(bridge.ResponseEvent("response.completed", 1, r))
	sc.conv.commit(len(t.base), cloneItems(t.input), nil, id, t.params)
	sc.lastID = id
}

// zeroUsage is the usage of a response no model generated.
var zeroUsage = []byte(`{"input_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens":0,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":0}`)

// run runs one turn as a request through the relay's phases, with the socket as its client.
func (sc *socketConn) run(t *socketTurn, size int) {
	s := sc.s
	// A turn copies its frame and conversation (the replay, the upstream body): large turns
	// share the budget of frames, one always admitted, so that many of them at once cannot
	// multiply the relay's memory.
	need := int64(2 * (size + itemsLen(t.base)))
	if n := s.turnBytes.Add(need); n > need && n+s.frameBytes.Load() > s.opt.SocketReadBudget {
		s.turnBytes.Add(-need)
		sc.sendError(&apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "server_busy",
			Message: "Codex Relay is serving too many large WebSocket turns at once: try again in a moment"})
		return
	}
	defer s.turnBytes.Add(-need)
	w := &socketWriter{sc: sc, turn: t, h: http.Header{}}
	// The turn's own context: the connection's, which a response.interrupt also ends.
	ctx, cancel := context.WithCancel(sc.ctx)
	defer cancel()
	t.stop = cancel
	sc.running.Store(t)
	defer sc.running.Store(nil)
	r := (&http.Request{Method: http.MethodPost, URL: &url.URL{Path: "/v1/responses"}, Header: sc.header, Proto: "HTTP/1.1"}).WithContext(ctx)
	x := s.begin(w, r, sc.row)
	x.via.turn, x.via.events = t, w
	x.t.Transport, x.t.ClientBytes = TransportWebSocket, int64(size)
	defer x.end()
	req, e := clientFields(routeResponses, t.obj, sc.header)
	if e != nil {
		x.reject(e, OutcomeRejected)
		w.finish(x)
		return
	}
	req.stream = true // a socket's turns always stream
	x.admitted(req, t)
	// Copied now, while the turn's memory is counted: the client may send its next frame as
	// soon as this one's answer arrives.
	t.params = withoutInput(t.obj)
	x.relay()
	if t.interrupted.Load() {
		x.interrupted(w)
	}
	w.finish(x)
	switch {
	case t.completedID != "":
		// The input items are parts of the frame: copied, the frame is let go. Only a turn
		// that completed leaves its parameters (in the conversation, inside its budget).
		sc.conv.commit(len(t.base), cloneItems(t.input), t.output, t.completedID, t.params)
		sc.lastID = t.completedID
	case t.prev != "" && x.t.Outcome == OutcomeFailed && !t.interrupted.Load():
		// The upstream refused the continuation: as the API does, the connection forgets the
		// response it continued, and a turn that names it again is previous_response_not_found
		// rather than that conversation replayed as if nothing had failed.
		sc.conv.evict(t.prev)
	}
}

// socketTurn is one response.create of a connection: the frame, the conversation it follows
// and, once built, the whole input replayed for an account that cannot follow it.
type socketTurn struct {
	sc    *socketConn
	obj   *payload.Object // the frame as the client sent it
	prev  string          // previous_response_id ("": none)
	base  [][]byte        // the conversation's items up to prev
	input [][]byte        // the frame's input items
	// keepPrev says that prev is not in the conversation but may be stored upstream: the turn
	// goes up with previous_response_id, to a Responses account only, and is never replayed.
	keepPrev bool
	// metadata is the frame's client_metadata (the turn's Codex headers, turn.go), read once.
	metadata map[string]string
	// params is the frame without its input, copied once the frame was checked: what the
	// conversation keeps for response.append if the turn completes.
	params *payload.Object
	// replay is the turn as one HTTP request body (the whole input, no previous_response_id),
	// built on first need; split is its input items, split once.
	replay     *payload.Object
	replayBody []byte
	split      [][]byte
	// renewed says that the turn was moved to a new upstream socket once, after the upstream
	// ended the old one at its time limit.
	renewed bool
	// stop ends the turn's context; interrupted says that a response.interrupt did
	// (interrupt.go).
	stop        context.CancelFunc
	interrupted atomic.Bool
	ended       atomic.Bool            // its terminal event was sent: a control frame is no longer its
	respID      atomic.Pointer[string] // the id of the response being relayed, once known
	// upstream is the upstream socket the turn runs on (nil: it runs over HTTP, or has not
	// been sent yet).
	upstream atomic.Pointer[websocket.Conn]
	// What the turn answered: the id and output items of its completed (or incomplete)
	// response, copied; and whether a terminal event reached the client.
	completedID string
	output      [][]byte
	terminal    bool
}

// full returns the turn as an HTTP Responses body: the whole conversation's input, streamed.
func (t *socketTurn) full() (*payload.Object, []byte) {
	if t.replay == nil {
		ov := []payload.Override{
			{Key: "type"}, {Key: "generate"}, {Key: "previous_response_id"},
			{Key: "input", Value: joinItems(t.base, t.input)},
			{Key: "stream", Value: []byte("true")},
		}
		if t.keepPrev {
			ov[2] = payload.Override{Key: "previous_response_id", Value: payload.AppendString(nil, t.prev)}
		}
		t.replayBody = payload.Build(nil, t.obj, ov)
		o, err := payload.Parse(t.replayBody)
		if err != nil {
			panic("proxy: a replayed body does not parse: " + err.Error()) // built from parsed parts
		}
		t.replay = o
	}
	return t.replay, t.replayBody
}

// A turn is the request body upstream bodies are built from (requestBody): the conversation
// it follows replayed, and its frame's metadata.

func (t *socketTurn) whole() wholeBody {
	o, b := t.full()
	return wholeBody{obj: o, raw: b}
}

func (t *socketTurn) items() [][]byte {
	if t.split == nil {
		t.split = append(slices.Clip(t.base), t.input...)
		if t.split == nil {
			t.split = [][]byte{}
		}
	}
	return t.split
}

func (t *socketTurn) firstItem([]byte) []byte {
	if items := t.items(); len(items) > 0 {
		return items[0]
	}
	return nil
}

func (t *socketTurn) meta() map[string]string { return t.metadata }

func (t *socketTurn) follows() string {
	if t.keepPrev {
		return t.prev
	}
	return ""
}

// send writes one event to the client; false when it is gone.
func (sc *socketConn) send(data []byte) bool {
	return sc.c.Write(sc.ctx, websocket.MessageText, data) == nil
}

// sendError answers a frame with an error event in the shape of the WebSocket transport:
// {"type":"error","status":400,"error":{"type","code","message","param"}}.
func (sc *socketConn) sendError(e *apiError) {
	sc.send(errorEvent(e.Status, e, e.Header))
}

// errorEvent is an error event of status; the rate-limit headers of h go with it, as a
// socket's upstream sends them and Codex reads them on a 429 (ratelimits.go).
func errorEvent(status int, e any, h http.Header) []byte {
	var headers map[string]string
	for k, v := range h {
		if lk := strings.ToLower(k); rateLimitHeader(lk) && len(v) > 0 {
			if headers == nil {
				headers = map[string]string{}
			}
			headers[lk] = v[0]
		}
	}
	b, _ := json.Marshal(struct {
		Type    string            `json:"type"`
		Status  int               `json:"status"`
		Error   any               `json:"error"`
		Headers map[string]string `json:"headers,omitempty"`
	}{"error", status, e, headers})
	return b
}

// socketWriter is a turn's client: the event sink its stream is written to (each event leaves
// as one text frame) and the ResponseWriter of a plain answer (an error, a whole response),
// turned into its event when the turn ends.
type socketWriter struct {
	sc     *socketConn
	turn   *socketTurn
	h      http.Header
	status int
	sse    bool   // the answer is a stream (start was called)
	plain  []byte // a plain answer's body
	err    error
	events int64
}

func (w *socketWriter) Header() http.Header { return w.h }

func (w *socketWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

// Write collects a plain answer's body.
func (w *socketWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	w.plain = append(w.plain, b...)
	return len(b), nil
}

// start begins a streamed answer: its events follow as frames. A turn state the upstream
// issued in its headers (a turn served over HTTP) reaches the client as a socket's upstream
// would give it: in a response.metadata event, which the Codex CLI replays from.
func (w *socketWriter) start(h http.Header) error {
	w.WriteHeader(http.StatusOK)
	w.sse = true
	if st := h.Get(turnStateHeader); st != "" && w.err == nil {
		ev, _ := json.Marshal(map[string]any{"type": "response.metadata", "headers": map[string]string{strings.ToLower(turnStateHeader): st}})
		if !w.sc.send(ev) {
			w.err = errClientGone
		}
	}
	// Codex reads a socket's rate limits from this event alone: the pool's (ratelimits.go).
	if ev := w.sc.s.rateLimitsEvent(); ev != nil && w.err == nil && !w.sc.send(ev) {
		w.err = errClientGone
	}
	return w.err
}

// flush: every event leaves as it is written.
func (w *socketWriter) flush() error { return w.err }

// event sends one event's data as a frame, and notes what the turn answered.
func (w *socketWriter) event(name string, data, _ []byte) error {
	if w.err != nil {
		return w.err
	}
	if len(data) == 0 {
		return nil // a comment: nothing to send
	}
	if name == "" {
		name = eventType(data)
	}
	if name == rateLimitsEventName {
		return nil // the serving account's figures: the client has the pool's (start)
	}
	if w.turn.interrupted.Load() {
		return errTurnInterrupted // nothing more of an interrupted turn reaches the client
	}
	if isTerminalEvent(name) {
		w.turn.ended.Store(true) // before the client can answer it
	}
	if !w.sc.send(data) {
		w.err = errClientGone
		return w.err
	}
	if w.events == 0 || name == "response.created" {
		if id := responseIDOf(data); id != "" {
			w.turn.respID.Store(&id)
		}
	}
	w.events++
	if isTerminalEvent(name) {
		w.turn.terminal = true
		if name == "response.completed" || name == "response.incomplete" {
			w.turn.completedID, w.turn.output = responseOutput(data)
		}
	}
	return nil
}

// finish turns a plain answer into its event: an error status into an error event, a whole
// response (a translated answer) into response.completed. A turn that ended with nothing
// terminal sent (the client is still there) gets an error, so that each frame has its answer.
func (w *socketWriter) finish(x *exchange) {
	if w.err != nil || w.sc.ctx.Err() != nil || w.turn.terminal {
		return
	}
	switch {
	case w.status >= 400 || (w.status != 0 && w.status != http.StatusOK):
		var v struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(w.plain, &v) != nil || len(v.Error) == 0 {
			v.Error, _ = json.Marshal(&apiError{Type: "upstream_error", Message: truncate(strings.TrimSpace(string(w.plain)), 500)})
		}
		w.sc.send(errorEvent(w.status, v.Error, w.h))
		w.turn.terminal = true
	case !w.sse && len(w.plain) > 0:
		w.event("response.completed", append(append([]byte(`{"type":"response.completed","response":`), w.plain...), '}'), nil)
	default:
		w.sc.sendError(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "server_error", Message: "the turn ended without an answer: " + x.t.Error})
	}
}

var errClientGone = errors.New("the client closed the WebSocket")

// eventType is the "type" of an event's data.
func eventType(data []byte) string {
	o, _ := payload.Parse(data)
	t, _ := stringMember(o, "type")
	return t
}

// responseOutput reads the id and the output items (copied) of a terminal event's response.
func responseOutput(data []byte) (string, [][]byte) {
	o, _ := payload.Parse(data)
	r := responseObject(o)
	if r == nil {
		return "", nil
	}
	id, _ := stringMember(r, "id")
	out, _ := r.Get("output")
	items, _ := payload.Elements(out)
	for i, it := range items {
		items[i] = bytes.Clone(it)
	}
	return id, items
}

// itemsLen is the bytes of items.
func itemsLen(items [][]byte) int {
	n := 0
	for _, it := range items {
		n += len(it)
	}
	return n
}

// cloneItems copies items into one allocation of their own.
func cloneItems(items [][]byte) [][]byte {
	buf := make([]byte, 0, itemsLen(items))
	out := make([][]byte, len(items))
	for i, it := range items {
		buf = append(buf, it...)
		out[i] = buf[len(buf)-len(it):]
	}
	return out
}

// stringMember is a string member of o ("", false when o is nil, or the member absent or not
// a string).
func stringMember(o *payload.Object, key string) (string, bool) {
	if o == nil {
		return "", false
	}
	raw, ok := o.Get(key)
	if !ok || payload.KindOf(raw) != payload.KindString {
		return "", false
	}
	s, err := payload.DecodeString(raw)
	return s, err == nil
}

// drainSockets asks every open client socket to close after its current turn.
func (s *Server) drainSockets() {
	s.sockets.Range(func(k, _ any) bool {
		k.(*socketConn).drain()
		return true
	})
}

// convBudget is the relay's bound of the conversations' histories, made on first need.
func (s *Server) convBudget() *convBudget {
	s.convOnce.Do(func() {
		s.convs = newConvBudget(s.budgets.of(budgetConversations), maxConversationBytes)
	})
	return s.convs
}
