package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/codexrelay/codexrelay/proxy/payload"
	"github.com/codexrelay/codexrelay/proxy/pool"
	"github.com/codexrelay/codexrelay/proxy/sse"
)

// The fifth wire: a WebSocket turn to an account whose upstream speaks the Responses API over
// WebSocket (the ChatGPT backend, the OpenAI API). The client connection keeps one upstream
// socket, to the account that served its last turn. While the conversation stays there, a turn
// goes up as the client sent it: the new items and previous_response_id. A turn that cannot
// follow on that socket (another account after a rotation, a new socket after a break, a
// response the upstream never saw) goes up whole: the conversation replayed, without
// previous_response_id.
//
// The upstream's events are read one text frame an event (socketEvents: one parse of the frame
// names it, nothing is encoded as SSE), through the eventSource an HTTP stream's SSE reader
// also is, so that the attempt and respond phases treat them as any stream: held bookkeeping,
// first-event classification, rotation before the first event, response.failed after it.

// An upstream that refuses the upgrade with one of these statuses does not speak WebSocket
// (or not on this path): the account is served over HTTP for noSocketFor.
func noSocketStatus(status int) bool {
	switch status {
	case http.StatusOK, http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed,
		http.StatusUpgradeRequired, http.StatusNotImplemented:
		return true
	}
	return false
}

const noSocketFor = time.Hour

// errNoSocket: the account's upstream does not speak WebSocket; serve the turn over HTTP.
var errNoSocket = errors.New("the upstream does not accept WebSocket")

// speaksSocket reports whether a turn may go to m over WebSocket: a Responses account whose
// upstream has not refused the upgrade lately.
func (s *Server) speaksSocket(m *member) bool {
	if isChatAccount(m) {
		return false
	}
	return !s.now().Before(m.NoSocketUntil())
}

// upstreamSocket is a client connection's socket to one account.
type upstreamSocket struct {
	c    *websocket.Conn
	key  string // the account's key
	last string // the id of the last response that completed on it ("": none)
	dead bool   // broken, or cut in the middle of a turn: not to be used again
	// reused says that the socket served an earlier turn: an upstream may close an idle
	// socket, so a break before the first event of a turn on it is retried on a new one.
	reused bool
}

func (u *upstreamSocket) close() {
	u.dead = true
	go u.c.Close(websocket.StatusNormalClosure, "")
}

// sendSocket is the socket wire's send function: the turn goes to the try's account m over
// the connection's upstream socket, opened when there is none to m. The answer's events are the socket's frames
// up to the turn's terminal event. A refused upgrade comes back as the upstream's answer (for
// classifyStatus), or as errNoSocket when the upstream does not speak WebSocket.
func sendSocket(x *exchange, tr *accountTry, tmo Timeouts) (sent, error) {
	m, sc := tr.m, x.via.turn.sc
	c := newCall(x.r.Context())
	c.arm(tmo.Header, errHeaderTimeout)
	out := sent{}
	for {
		if up := sc.up; up != nil && (up.key != m.Key() || up.dead) {
			up.close()
			sc.up = nil
		}
		if sc.up == nil {
			conn, resp, err := x.s.dialSocket(c.ctx, m, tr.cred, x.upstreamHeaders(tr, true))
			if err != nil {
				if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
					if noSocketStatus(resp.StatusCode) {
						m.RefuseSockets(x.s.now().Add(noSocketFor))
						resp.Body.Close()
						c.end()
						return out, errNoSocket
					}
					c.timer.Stop()
					out.resp, out.call = resp, c
					return out, nil // refused: an answer for classifyStatus
				}
				err = c.explain(err)
				c.end()
				return out, err
			}
			sc.up = &upstreamSocket{c: conn, key: m.Key()}
		} else {
			sc.up.reused = true
		}
		up := sc.up
		frame := x.socketFrame(tr, up)
		out.bytes += len(frame)
		err := up.c.Write(c.ctx, websocket.MessageText, frame)
		if err == nil {
			break
		}
		up.close()
		if !up.reused || c.ctx.Err() != nil {
			err = c.explain(err)
			c.end()
			return out, err
		}
		// An upstream may close a socket left idle between turns: open a new one.
	}
	// The frame is the request: what follows is the answer's first event (await arms its wait).
	// The turn runs on this socket now: a client's response.steer reaches it (interrupt.go).
	x.via.turn.upstream.Store(sc.up.c)
	c.timer.Stop()
	out.resp = &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: http.NoBody}
	out.call = c
	out.events = &socketEvents{up: sc.up, c: c}
	return out, nil
}

// renewSocket is the socket wire's recover: what an upstream socket does that a new socket to
// the same account mends, with the conversation replayed, before the client notices.
func renewSocket(x *exchange, j *pool.Judgment, err error) (string, bool) {
	up := x.via.turn.sc.up
	switch {
	case j == nil && up != nil && up.reused && !isTimeout(err):
		// An upstream may close a socket left idle between turns: the same account again,
		// on a new socket, is no failure of it.
		return " (on a socket kept from an earlier turn: retried on a new one)", true
	case j == nil:
		return "", false
	case j.Class == pool.LostPrevious && x.t.Incremental && !x.via.turn.keepPrev:
		up.close()
		return "the upstream socket lost the conversation: replayed on a new one", true
	case j.Class == pool.SocketEnded && !x.via.turn.renewed:
		// The upstream ends each socket after its time limit (60 minutes); once a turn.
		x.via.turn.renewed = true
		up.close()
		return "the upstream socket reached its time limit: replayed on a new one", true
	}
	return "", false
}

// socketFrame is the response.create frame of a try: the client's frame as it came (the new
// items after previous_response_id) when the socket holds the conversation up to it, else the
// whole conversation. Routing's overrides apply either way; stream and background have no
// place in a frame.
func (x *exchange) socketFrame(tr *accountTry, up *upstreamSocket) []byte {
	m := tr.m
	classic := x.classicFor(tr)
	ov := append(x.modelOverride(tr.tg), x.toolOverrides(tr, classic)...)
	ov = append(ov, payload.Override{Key: "stream"}, payload.Override{Key: "background"})
	if m.Kind == KindChatGPT {
		ov = append(ov, payload.Override{Key: "store", Value: []byte("false")})
	}
	if tier, ok := x.tierFor(m); ok {
		ov = append(ov, tier)
	}
	if meta, ok := x.metadataFor(tr, x.via.turn.obj, true); ok {
		ov = append(ov, meta)
	}
	t := x.via.turn
	if t.prev != "" && (up.last == t.prev || t.keepPrev) {
		// The upstream holds the conversation up to prev: only the new items go, under the
		// same rule for sealed parts as a replay.
		x.t.Incremental = true
		if in, ok := x.inputFor(m, func() [][]byte { return t.input }, classic); ok {
			ov = append(ov, in)
		}
		return x.build(wholeBody{obj: t.obj}, "", ov).b
	}
	x.t.Incremental = false
	if in, ok := x.inputFor(m, t.items, classic); ok {
		ov = append(ov, in)
	}
	return x.build(t.whole(), "input", append(ov, payload.Override{Key: "type", Value: []byte(`"response.create"`)})).b
}

// dialSocket opens a socket to m's Responses endpoint with the headers of every upstream call.
// extra holds the client's headers that go with it (upstreamHeaders); the turn state the
// upstream issues in its handshake is remembered as that account's.
func (s *Server) dialSocket(ctx context.Context, m *member, cred Credential, extra http.Header) (*websocket.Conn, *http.Response, error) {
	u := m.BaseURL + "/responses"
	req, err := s.upstreamRequest(ctx, m, cred, http.MethodGet, u, "")
	if err != nil {
		return nil, nil, err
	}
	h := req.Header
	h.Del("Accept")
	h.Set("OpenAI-Beta", SocketBeta)
	for k, v := range extra {
		h[k] = v
	}
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: s.socketClient(), HTTPHeader: h})
	if err != nil {
		return nil, resp, err
	}
	s.learnTurnState(m, resp.Header)
	conn.SetReadLimit(maxEventBytes)
	return conn, resp, nil
}

// socketClient dials upstream sockets: the relay's transport, over HTTP/1.1 (a WebSocket
// upgrade has no place in HTTP/2), following no redirect.
func (s *Server) socketClient() *http.Client {
	s.socketOnce.Do(func() {
		rt := s.opt.Transport
		if t, ok := rt.(*http.Transport); ok {
			t = t.Clone()
			t.ForceAttemptHTTP2 = false
			t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
			rt = t
		}
		s.socketHTTP = &http.Client{Transport: rt, CheckRedirect: noRedirects}
	})
	return s.socketHTTP
}

// socketEvents are one turn's events read from an upstream socket, one frame an event, up to
// the terminal event; each read extends the call's idle deadline. A turn left before its
// terminal event leaves the socket unusable (the rest of the turn would arrive before the
// next one's): it is closed when the call ends (answer.close).
type socketEvents struct {
	up   *upstreamSocket
	c    *call
	done bool
}

func (e *socketEvents) Buffered() int { return 0 }

func (e *socketEvents) Next() (sse.Event, error) {
	for {
		if e.done {
			return sse.Event{}, io.EOF
		}
		typ, data, err := e.up.c.Read(e.c.ctx)
		if err != nil {
			e.up.dead = true
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return sse.Event{}, err
			}
			return sse.Event{}, io.ErrUnexpectedEOF
		}
		e.c.touch()
		if typ != websocket.MessageText {
			continue
		}
		// One parse of the frame gives its type and, for a terminal event, its response id.
		ev, _ := payload.Parse(data)
		name, _ := stringMember(ev, "type")
		if isTerminalEvent(name) {
			e.done = true
			e.up.last = ""
			if name == "response.completed" || name == "response.incomplete" {
				e.up.last, _ = stringMember(responseObject(ev), "id")
			}
		}
		return sse.Event{Name: name, Data: data}, nil
	}
}

// abandon closes the socket when the turn is left before its terminal event.
func (e *socketEvents) abandon() {
	if !e.done && !e.up.dead {
		e.up.dead = true
		e.up.c.CloseNow()
	}
}
