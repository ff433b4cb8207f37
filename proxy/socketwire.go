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
// The upstream's events are read as SSE (socketTurnBody), so that the attempt and respond
// phases treat them as any stream: held bookkeeping, first-event classification, rotation
// before the first event, response.failed after it.

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
	if m.Kind == KindOpenAI && m.API == APIChat {
		return false
	}
	until := m.noSocketUntil.Load()
	return until == 0 || s.now().UnixNano() >= until
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

// sendSocket sends the turn to m over the connection's upstream socket, opening one when
// there is none to m. The answer reads as an SSE stream of the upstream's events, up to the
// turn's terminal event. A refused upgrade comes back as the upstream's answer (for
// classifyStatus), or as errNoSocket when the upstream does not speak WebSocket.
func (x *exchange) sendSocket(ctx context.Context, m *member, cred Credential, headerTimeout time.Duration) (*http.Response, *call, int, error) {
	sc := x.turn.sc
	c := newCall(ctx)
	c.arm(headerTimeout, errHeaderTimeout)
	sent := 0
	for {
		if up := sc.up; up != nil && (up.key != m.key() || up.dead) {
			up.close()
			sc.up = nil
		}
		if sc.up == nil {
			conn, resp, err := x.s.dialSocket(c.ctx, m, cred, x.upstreamHeaders(m))
			if err != nil {
				if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
					if noSocketStatus(resp.StatusCode) {
						m.noSocketUntil.Store(x.s.now().Add(noSocketFor).UnixNano())
						resp.Body.Close()
						c.end()
						return nil, nil, sent, errNoSocket
					}
					c.timer.Stop()
					return resp, c, sent, nil // refused: an answer for classifyStatus
				}
				err = c.explain(err)
				c.end()
				return nil, nil, sent, err
			}
			sc.up = &upstreamSocket{c: conn, key: m.key()}
		} else {
			sc.up.reused = true
		}
		up := sc.up
		frame := x.socketFrame(m, up)
		sent += len(frame)
		err := up.c.Write(c.ctx, websocket.MessageText, frame)
		if err == nil {
			break
		}
		up.close()
		if !up.reused || c.ctx.Err() != nil {
			err = c.explain(err)
			c.end()
			return nil, nil, sent, err
		}
		// An upstream may close a socket left idle between turns: open a new one.
	}
	up := sc.up
	// The frame is the request: what follows is the answer's first event (await arms its wait).
	c.timer.Stop()
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: &socketTurnBody{up: up, ctx: c.ctx}}
	return resp, c, sent, nil
}

// socketFrame is the response.create frame for m: the client's frame as it came (the new
// items after previous_response_id) when the socket holds the conversation up to it, else the
// whole conversation. Routing's overrides apply either way; stream and background have no
// place in a frame.
func (x *exchange) socketFrame(m *member, up *upstreamSocket) []byte {
	ov := x.modelOverride()
	if x.tools != nil {
		ov = append(ov, *x.tools)
		x.noteDroppedTools()
	}
	ov = append(ov, payload.Override{Key: "stream"}, payload.Override{Key: "background"})
	if m.Kind == KindChatGPT {
		ov = append(ov, payload.Override{Key: "store", Value: []byte("false")})
	}
	t := x.turn
	if t.prev != "" && (up.last == t.prev || t.keepPrev) {
		// The upstream holds the conversation up to prev: only the new items go, under the
		// same rule for sealed items as a replay.
		x.t.Incremental = true
		if in, ok := x.withoutSealed(m, func() [][]byte { return t.input }); ok {
			ov = append(ov, in)
		}
		return x.upstreamBody(t.obj, "", ov)
	}
	x.t.Incremental = false
	obj, _ := t.full()
	if in, ok := x.withoutSealed(m, x.inputItemsOf); ok {
		ov = append(ov, in)
	}
	return x.upstreamBody(obj, "input", append(ov, payload.Override{Key: "type", Value: []byte(`"response.create"`)}))
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

// socketTurnBody reads one turn's events from an upstream socket as SSE, up to the terminal
// event. Closing it before the terminal event leaves the socket unusable (the rest of the
// turn would arrive before the next one's): it is closed.
type socketTurnBody struct {
	up   *upstreamSocket
	ctx  context.Context
	buf  []byte
	off  int
	done bool
}

func (b *socketTurnBody) Read(p []byte) (int, error) {
	for b.off == len(b.buf) {
		if b.done {
			return 0, io.EOF
		}
		typ, data, err := b.up.c.Read(b.ctx)
		if err != nil {
			b.up.dead = true
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return 0, err
			}
			return 0, io.ErrUnexpectedEOF
		}
		if typ != websocket.MessageText {
			continue
		}
		// One parse of the frame gives its type and, for a terminal event, its response id.
		ev, _ := payload.Parse(data)
		name, _ := stringMember(ev, "type")
		b.buf, b.off = sse.AppendEvent(b.buf[:0], name, data), 0
		if isTerminalEvent(name) {
			b.done = true
			b.up.last = ""
			if name == "response.completed" || name == "response.incomplete" {
				b.up.last, _ = stringMember(responseObject(ev), "id")
			}
		}
	}
	n := copy(p, b.buf[b.off:])
	b.off += n
	return n, nil
}

func (b *socketTurnBody) Close() error {
	if !b.done && !b.up.dead {
		b.up.dead = true
		b.up.c.CloseNow()
	}
	return nil
}
