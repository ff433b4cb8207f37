package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Responses the relay served itself, continued over HTTP. A Responses client answered by a Chat
// Completions account gets a response the relay made (the bridge): no upstream stores it, yet
// the OpenAI SDKs continue a conversation over HTTP by naming the last response in
// previous_response_id and sending only the new items (a tool's result, say). So the relay keeps,
// for each response it made for an HTTP request that did not say store:false (as the API keeps
// only stored ones), the conversation up to it: the whole input it was asked with (the
// conversation it continued, and the request's own input items) and the output items it
// produced, byte for byte. They live in the conversations' budget the WebSocket connections use
// (conversation.go): one conversation at most maxConversationBytes, all of them together
// Options.ConversationBudget, the least recently used forgotten first.
//
// A request that names a response the relay holds gets that conversation replayed in its input,
// without previous_response_id, whatever account serves it (servedBody), and the trace says what
// was replayed (Trace.Replayed). One that names a response the relay does not hold goes as it
// came to a Responses account, which keeps its own; a Chat Completions account answers it
// previous_response_not_found (responsesOverChatBody), as the API does for a response it does
// not know, rather than serve it without its earlier turns.
//
// Conversations branch: continuing the last response of a conversation extends it; continuing
// an earlier one (a retry, a fork) starts a conversation of its own from the items up to it,
// which share their bytes with the first (counted in each, as the budget cannot tell).

// followServed makes the client's body of an HTTP Responses request that continues a response the
// relay served the conversation up to it, replayed. The replay is counted against the memory
// budget as it is built, and made once for identical requests (sharedReplay): sixteen SDK
// retries naming one 60 MiB conversation hold one replay, not sixteen. An error is the answer
// (503 relay_busy: no room for it within the wait).
func (x *exchange) followServed() *apiError {
	cb, ok := x.body.(*clientBody)
	if !ok || x.req.route != routeResponses {
		return nil
	}
	prev, _ := stringMember(cb.obj, "previous_response_id")
	if prev == "" {
		return nil
	}
	base, ok := x.s.convBudget().servedUpTo(prev)
	if !ok {
		return nil
	}
	est := int64(itemsLen(base) + len(cb.raw))
	trans := int64(0)
	if x.s.anyChatAccount() {
		// A Chat account would translate the replay: its room is taken with the replay's, at
		// once, so that requests holding a replay never wait for each other's room.
		trans = 2 * est
	}
	key := replayKey{prev: prev, body: sha256.Sum256(cb.raw), lite: x.liteMarked()}
	r, e := x.s.replays.join(x, key, func() (*servedBody, int64) {
		sb := &servedBody{client: cb, prev: prev, base: base}
		joined := joinItems(base, cb.items())
		sb.raw = payload.Build(nil, cb.obj, []payload.Override{{Key: "previous_response_id"}, {Key: "input", Value: joined}})
		o, err := payload.Parse(sb.raw)
		if err != nil {
			panic("proxy: a replayed body does not parse: " + err.Error()) // built from parsed parts
		}
		sb.obj = o
		return sb, int64(len(sb.raw))
	}, est, trans)
	if e != nil {
		return e
	}
	// The shared replay's own servedBody, with this request's client body: what keepServed
	// records is the request's own input.
	sb := *r.body
	sb.client, sb.shared, sb.split = cb, r, nil
	x.body = &sb
	x.t.Replayed = &Replay{PreviousResponseID: truncate(prev, 100), Items: len(base), Bytes: int64(itemsLen(base))}
	return nil
}

// replayKey names a replay: the response it continues, and the digest of the client's body.
type replayKey struct {
	prev string
	body [32]byte
	lite bool // the request is marked Lite (its header): its translation differs (x.lite)
}

// replays are the replayed bodies requests use now, shared by identical requests.
type replays struct {
	mu sync.Mutex
	in map[replayKey]*sharedReplay
}

// sharedReplay is one replayed body and its translation for a Chat account, made once and
// held, in the memory budget, until the last request using it ends.
type sharedReplay struct {
	key   replayKey
	refs  int // under replays.mu
	ready chan struct{}
	body  *servedBody
	err   *apiError
	held  int64 // what it holds of the memory budget, reserve included

	transMu sync.Mutex
	trans   *translated
	reserve int64 // room taken for the translation, not yet used
}

// join returns the replay key names, made by build (which says the bytes it made) by the first
// request that needs it and waited for by the others; est is what the budget is asked for
// before it is built, and trans the room kept for its translation. The request holds it until
// it ends.
func (rs *replays) join(x *exchange, key replayKey, build func() (*servedBody, int64), est, trans int64) (*sharedReplay, *apiError) {
	rs.mu.Lock()
	if rs.in == nil {
		rs.in = map[replayKey]*sharedReplay{}
	}
	r := rs.in[key]
	maker := r == nil
	if maker {
		r = &sharedReplay{key: key, ready: make(chan struct{})}
		rs.in[key] = r
	}
	r.refs++
	rs.mu.Unlock()
	x.out.onEnd(func() { rs.leave(x.s.mem, r) })
	if maker {
		if r.err = x.holdShared(&r.held, est+trans); r.err == nil {
			var size int64
			r.body, size = build()
			r.reserve = min(trans, r.held)
			if back := r.held - r.reserve - size; back > 0 {
				x.s.mem.release(back)
				r.held -= back
			}
		} else {
			rs.mu.Lock()
			delete(rs.in, key) // the next request tries again
			rs.mu.Unlock()
		}
		close(r.ready)
	}
	select {
	case <-r.ready:
	case <-x.r.Context().Done():
		return nil, &apiError{Status: 499, Type: "invalid_request_error", Code: "client_closed", Message: "the client went away"}
	}
	if r.err != nil && r.err.Status == 499 && !maker && x.r.Context().Err() == nil {
		// The maker's client went away while it waited for room: this request makes it.
		return rs.join(x, key, build, est, trans)
	}
	return r, r.err
}

// leave lets go of r for one request; the last one gives back what it holds.
func (rs *replays) leave(b *memBudget, r *sharedReplay) {
	rs.mu.Lock()
	r.refs--
	last := r.refs == 0
	if last && rs.in[r.key] == r {
		delete(rs.in, r.key)
	}
	rs.mu.Unlock()
	if last {
		r.transMu.Lock()
		b.release(r.held)
		r.held, r.trans, r.body = 0, nil, nil
		r.transMu.Unlock()
	}
}

// translation is the replay in a Chat account's protocol, made once (by make) for all the
// requests that share it, in the room kept for it (more taken if that is short); what it does
// not use goes back. An error (no room) is not kept: the next request tries again.
func (r *sharedReplay) translation(x *exchange, make func() *translated) *translated {
	r.transMu.Lock()
	defer r.transMu.Unlock()
	if r.trans != nil {
		return r.trans
	}
	if est := 2 * int64(len(r.body.raw)); r.reserve < est {
		before := r.held
		if e := x.holdShared(&r.held, est-r.reserve); e != nil {
			return &translated{err: e}
		}
		r.reserve += r.held - before
	}
	t := make()
	if back := r.reserve - t.size; back > 0 {
		x.s.mem.release(back)
		r.held -= back
	}
	r.reserve, r.trans = 0, t
	return t
}

// holdShared takes n bytes of the budget for something several requests share, adding them
// to *held: waiting as x.hold does, and answering as it does when there is no room.
func (x *exchange) holdShared(held *int64, n int64) *apiError {
	n = min(n, x.s.mem.room(n))
	if e := x.take(n, 0); e != nil {
		return e
	}
	*held += n
	return nil
}

// servedBody is an HTTP request that continues a response the relay served: the client's body
// with the conversation up to previous_response_id replayed in its input, a request of its own.
type servedBody struct {
	client *clientBody
	prev   string   // the response it continues
	base   [][]byte // the conversation up to prev, as kept
	obj    *payload.Object
	raw    []byte
	split  [][]byte
	shared *sharedReplay // the replay it is, shared with identical requests
}

func (b *servedBody) whole() wholeBody { return wholeBody{obj: b.obj, raw: b.raw} }

func (b *servedBody) items() [][]byte {
	if b.split == nil {
		b.split = append(append(make([][]byte, 0, len(b.base)+len(b.client.items())), b.base...), b.client.items()...)
	}
	return b.split
}

func (b *servedBody) firstItem([]byte) []byte {
	if items := b.items(); len(items) > 0 {
		return items[0]
	}
	return nil
}

func (b *servedBody) meta() map[string]string { return nil }

func (b *servedBody) follows() string { return "" }

// Replay is what a request was sent in place of its previous_response_id: the items of the
// conversation the relay kept up to that response, and their bytes.
type Replay struct {
	PreviousResponseID string `json:"previousResponseId"`
	Items              int    `json:"items"`
	Bytes              int64  `json:"bytes"`
}

// errPreviousNotFound is the answer to a request that continues a response nobody holds, in
// the API's words.
func errPreviousNotFound(id string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "previous_response_not_found",
		Param: "previous_response_id", Message: fmt.Sprintf("Previous response with id '%s' not found.", truncate(id, 100))}
}

// keepServed keeps the response id the relay made for an HTTP Responses request, with the
// output items it produced (in memory of their own), unless the request said store:false.
func (x *exchange) keepServed(id string, output []json.RawMessage) {
	if x.via.turn != nil || x.req.route != routeResponses {
		return // a socket's turns are its connection's conversation
	}
	if raw, ok := x.req.obj.Get("store"); ok && payload.KindOf(raw) == payload.KindFalse {
		return
	}
	var prev string
	var base, input [][]byte
	switch b := x.body.(type) {
	case *servedBody:
		prev, base, input = b.prev, b.base, b.client.items()
	case *clientBody:
		input = b.items()
	default:
		return
	}
	out := make([][]byte, len(output))
	for i, it := range output {
		out[i] = it
	}
	x.s.convBudget().keepServed(prev, base, cloneItems(input), out, id)
}

// servedUpTo returns the items of the conversation up to response id, when the relay holds it.
func (b *convBudget) servedUpTo(id string) ([][]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.served[id]
	if c == nil {
		return nil, false
	}
	n, ok := c.ends[id]
	if !ok {
		return nil, false
	}
	b.lru.touch(c.el)
	return c.items[:n:n], true
}

// keepServed records response id, served for a request that continued prev ("": none) with
// base, the conversation up to prev, replayed: the request's own input items and the output
// are appended to prev's conversation when prev is still its last response, else they start a
// conversation of their own from base.
func (b *convBudget) keepServed(prev string, base, input, output [][]byte, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.served == nil {
		b.served = map[string]*conversation{}
	}
	if _, dup := b.served[id]; dup {
		return // ids are made once; a second record of one would cross two conversations
	}
	c := b.served[prev]
	if c == nil || c.ends[prev] != len(c.items) {
		c = b.newConversation()
		c.served = true
		input = append(append(make([][]byte, 0, len(base)+len(input)), base...), input...)
	}
	// An id costs its entry, whatever its items weigh: a conversation of responses with no
	// items stays inside the bound too.
	c.grow(servedEntryBytes)
	b.served[id] = c // before commit, which may forget c at once (it is then out of the index)
	c.commitLocked(len(c.items), input, output, id, nil)
}

// servedEntryBytes is what the budget counts for each response a served conversation holds,
// besides its items.
const servedEntryBytes = 128

// responseItems reads the id and the output items (copied) of a response object.
func responseItems(resp []byte) (string, []json.RawMessage) {
	o, err := payload.Parse(resp)
	if err != nil {
		return "", nil
	}
	id, _ := stringMember(o, "id")
	out, _ := o.Get("output")
	items, _ := payload.Elements(out)
	kept := make([]json.RawMessage, len(items))
	for i, it := range items {
		kept[i] = bytes.Clone(it)
	}
	return id, kept
}

// anyChatAccount reports whether an account of the pool would translate a Responses request.
func (s *Server) anyChatAccount() bool { return s.pool.AnyChat() }
