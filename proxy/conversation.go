package proxy

import (
	"sync"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Conversation state of a WebSocket connection. Over a socket the Codex CLI sends, after its
// first turn, only the new input items and the id of the response they follow
// (previous_response_id). The relay keeps, per connection, the whole input of the conversation
// so far: each turn's input items as the client sent them and the output items of each
// completed response as the upstream sent them, byte for byte. An account reached over HTTP,
// or any account after a rotation, gets that whole input replayed.

// conversation is one connection's history: one chain of items, and for each response id the
// relay saw complete, how many items of the chain it closes. A turn that follows an older
// response (the client forked, or retried after a failure) cuts the chain back to it.
type conversation struct {
	items [][]byte
	ends  map[string]int
	size  int64 // bytes of items and params
	// params is the parameters (the frame without its input) of the last response.create
	// that completed, which response.append continues with; counted in size, so that what an
	// idle connection keeps of its frames stays inside the budget (nil: none, or forgotten).
	params     *payload.Object
	paramsSize int64
	// budget and el account for this conversation in the relay-wide budget: el holds size, in
	// the budget's LRU (nil: closed, or a served conversation forgotten).
	budget *convBudget
	el     *lruEntry[*conversation]
	// served says that the conversation is one of the responses the relay served over HTTP
	// (served.go): its ids are in the budget's index, and forgotten it is let go whole.
	served bool
}

// maxConversationBytes bounds one connection's history. A conversation over it is forgotten:
// its next turn that names a previous response gets previous_response_not_found, as from an
// upstream that forgot it, and the client starts over with the whole input.
const maxConversationBytes = 64 << 20

func newConversation(b *convBudget) *conversation {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.newConversation()
}

// newConversation is a new conversation in b, most recently used. Called with b.mu held.
func (b *convBudget) newConversation() *conversation {
	c := &conversation{ends: map[string]int{}, budget: b}
	c.el = b.lru.push(c, 0)
	return c
}

// upTo returns the items the conversation held when response id completed.
func (c *conversation) upTo(id string) ([][]byte, bool) {
	c.budget.mu.Lock()
	defer c.budget.mu.Unlock()
	n, ok := c.ends[id]
	if !ok {
		return nil, false
	}
	c.budget.lru.touch(c.el)
	return c.items[:n:n], true
}

// commit records a completed turn: the chain cut back to the first base items, then the
// turn's input and output, closed by response id; params (nil: keep the last ones) are the
// turn's parameters without its input, which a later response.append continues with.
func (c *conversation) commit(base int, input, output [][]byte, id string, params *payload.Object) {
	b := c.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	c.commitLocked(base, input, output, id, params)
}

// commitLocked is commit, called with the budget's lock held.
func (c *conversation) commitLocked(base int, input, output [][]byte, id string, params *payload.Object) {
	b := c.budget
	if c.el == nil {
		return // closed
	}
	if params != nil {
		n := int64(params.Size)
		c.grow(n - c.paramsSize)
		c.params, c.paramsSize = params, n
	}
	if base < len(c.items) {
		for _, it := range c.items[base:] {
			c.grow(-int64(len(it)))
		}
		clear(c.items[base:])
		c.items = c.items[:base]
		for k, n := range c.ends {
			if n > base {
				delete(c.ends, k)
			}
		}
	}
	for _, group := range [][][]byte{input, output} {
		for _, it := range group {
			c.items = append(c.items, it)
			c.grow(int64(len(it)))
		}
	}
	c.ends[id] = len(c.items)
	b.lru.touch(c.el)
	if c.size > b.perConn {
		b.forget(c)
	}
	// Past the relay-wide bound, the least recently used conversations go first (those holding
	// nothing are passed over), this one last.
	b.lru.evict(0, func(o *conversation) bool { return o == c || o.size == 0 },
		func(e *lruEntry[*conversation]) { b.forget(e.Value) })
	if b.lru.over() {
		b.forget(c)
	}
}

// grow counts n more bytes of c's (fewer when negative), in c and in the budget. Called with
// the budget's lock held.
func (c *conversation) grow(n int64) {
	c.size += n
	if c.el != nil {
		c.budget.lru.grow(c.el, n)
	}
}

// evict forgets response id, whose continuation the upstream refused, as the API does: a turn
// that names it again gets previous_response_not_found (socket.go), and the items only it
// reached go.
func (c *conversation) evict(id string) {
	b := c.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := c.ends[id]; !ok || c.el == nil {
		return
	}
	delete(c.ends, id)
	keep := 0
	for _, n := range c.ends {
		keep = max(keep, n)
	}
	for _, it := range c.items[keep:] {
		c.grow(-int64(len(it)))
	}
	clear(c.items[keep:])
	c.items = c.items[:keep]
}

// lastParams is the parameters of the last completed response.create (nil: none, or
// forgotten for the bound).
func (c *conversation) lastParams() *payload.Object {
	c.budget.mu.Lock()
	defer c.budget.mu.Unlock()
	return c.params
}

// close drops the conversation's history (the connection closed).
func (c *conversation) close() {
	b := c.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.el == nil {
		return
	}
	b.forget(c)
	b.lru.remove(c.el)
	c.el = nil
}

// convBudget is the relay-wide bound of the conversations' histories, least recently used
// first out: its LRU holds every open conversation, and counts their bytes against the bound
// (the conversations' row of the budgets' table, budgets.go).
type convBudget struct {
	mu  sync.Mutex
	lru lru[*conversation]
	// perConn bounds one conversation (maxConversationBytes).
	perConn int64
	// forgotten counts histories dropped for the bound.
	forgotten int64
	// served indexes the conversations of the responses the relay served over HTTP by
	// response id (served.go).
	served map[string]*conversation
}

func newConvBudget(limit, perConn int64) *convBudget {
	return &convBudget{lru: lru[*conversation]{bound: limit}, perConn: perConn}
}

// forget drops c's history. Called with b.mu held.
func (b *convBudget) forget(c *conversation) {
	if c.size > 0 {
		b.forgotten++
	}
	c.grow(-c.size)
	c.params, c.paramsSize = nil, 0
	if c.served {
		// Nothing holds a served conversation but the index: it leaves it, and the list. Requests
		// replaying its items may still read them: they are let go, not cleared.
		for id := range c.ends {
			delete(b.served, id)
		}
		c.items, c.ends = nil, map[string]int{}
		if c.el != nil {
			b.lru.remove(c.el)
			c.el = nil
		}
		return
	}
	clear(c.items)
	c.items = c.items[:0]
	clear(c.ends)
}

// inputItems splits a Responses input value into its items: the elements of an array, or, for
// a string, the one user message it stands for.
func inputItems(raw []byte) ([][]byte, error) {
	switch payload.KindOf(raw) {
	case payload.KindString:
		s, err := payload.DecodeString(raw)
		if err != nil {
			return nil, err
		}
		item := append([]byte(`{"type":"message","role":"user","content":[{"type":"input_text","text":`), payload.AppendString(nil, s)...)
		return [][]byte{append(item, "}]}"...)}, nil
	case payload.KindArray:
		return payload.Elements(raw)
	}
	return nil, nil
}

// joinItems is the JSON array of items.
func joinItems(groups ...[][]byte) []byte {
	n := 2
	for _, g := range groups {
		for _, it := range g {
			n += len(it) + 1
		}
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	first := true
	for _, g := range groups {
		for _, it := range g {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, it...)
		}
	}
	return append(b, ']')
}
