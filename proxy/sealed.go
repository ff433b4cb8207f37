package proxy

import (
	"bytes"
	"hash/maphash"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/codexrelay/codexrelay/proxy/payload"
	"github.com/codexrelay/codexrelay/proxy/sse"
)

// Sealed items. The Codex CLI asks for reasoning.encrypted_content and replays every reasoning
// item it received, with that content, on each later request of the conversation. The content
// is sealed to the account that produced it: another account answers 400
// invalid_encrypted_content, and so would every retry. The same holds for a remote-compaction
// item and for any other item carrying encrypted_content.
//
// The relay learns from what it relays which account sealed each such item (a digest of the
// content, not the content), and an account receives the conversation without the items
// another account sealed: the whole item is left out, as a reasoning item is useless without
// its content. Items the serving account sealed itself, and items nobody is known to have
// sealed, go as they are. What the client sent and keeps is never changed: only the upstream
// body differs, and the trace counts what it left out (sealedOmitted).
//
// Where the relay cannot know (after a restart, an item it never saw), an upstream's refusal
// of sealed content is retried once on the same account without every sealed item it is not
// known to have sealed (sealedRetry); the relay then remembers those items as refused, so a
// conversation pays that extra round trip once.

// refusedOwner owns the items an account refused without the relay knowing who sealed them:
// they are foreign to every account.
const refusedOwner = ""

// defaultSealedItems bounds how many sealed items the relay remembers (about 40 bytes each);
// past it the oldest are forgotten, and an item forgotten that goes to a foreign account costs
// one strip-and-retry.
const defaultSealedItems = 1 << 18

// sealTable remembers which account sealed each item the relay relayed, by a 64-bit digest of
// its content. Bounded: a ring of digests in arrival order evicts the oldest.
type sealTable struct {
	seed maphash.Seed
	mu   sync.RWMutex
	own  map[uint64]uint32 // digest -> index in owners
	ring []uint64          // digests in arrival order (len = capacity once full)
	next int               // the ring's oldest entry once full
	cap  int
	// owners are the accounts' keys by index, count how many entries each owns.
	owners []string
	ids    map[string]uint32
	count  []int
	// sessions has, for each conversation (the request's session) the relay saw sealed items
	// in, a bit per owner index that sealed some (bit 63 for indexes past it); sessRing orders
	// them for eviction, at the table's capacity / 64.
	sessions map[string]uint64
	sessRing []string
	sessNext int
}

func newSealTable(capacity int) *sealTable {
	if capacity <= 0 {
		capacity = defaultSealedItems
	}
	return &sealTable{seed: maphash.MakeSeed(), own: map[uint64]uint32{}, cap: capacity, ids: map[string]uint32{},
		sessions: map[string]uint64{}}
}

// digest is the digest of a sealed value (raw JSON, quotes included) by what it says, not how
// it was written: an upstream that writes "\/" and a client that writes "/" seal the same.
func (t *sealTable) digest(content []byte) uint64 {
	if bytes.IndexByte(content, '\\') >= 0 {
		if s, err := payload.DecodeString(content); err == nil {
			return maphash.String(t.seed, s)
		}
	}
	if len(content) >= 2 && content[0] == '"' {
		content = content[1 : len(content)-1]
	}
	return maphash.Bytes(t.seed, content)
}

// learn records that owner sealed content (the raw JSON string value) in the conversation
// session ("" when the request named none).
func (t *sealTable) learn(owner, session string, content []byte) {
	d := t.digest(content)
	if t.knows(d, owner, session) {
		return // each turn replays what the relay learned on the turns before
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.ids[owner]
	if !ok {
		id = uint32(len(t.owners))
		t.owners = append(t.owners, owner)
		t.count = append(t.count, 0)
		t.ids[owner] = id
	}
	if session != "" {
		t.noteSession(session, id)
	}
	if was, ok := t.own[d]; ok {
		// Known: the latest word wins (an account that served it back owns it).
		t.count[was]--
		t.count[id]++
		t.own[d] = id
		return
	}
	if len(t.ring) < t.cap {
		t.ring = append(t.ring, d)
	} else {
		old := t.ring[t.next]
		if o, ok := t.own[old]; ok {
			t.count[o]--
			delete(t.own, old)
		}
		t.ring[t.next] = d
		t.next = (t.next + 1) % t.cap
	}
	t.own[d] = id
	t.count[id]++
}

// owner is the account that sealed content, if the relay knows.
func (t *sealTable) owner(content []byte) (string, bool) {
	d := t.digest(content)
	t.mu.RLock()
	defer t.mu.RUnlock()
	id, ok := t.own[d]
	if !ok {
		return "", false
	}
	return t.owners[id], true
}

// knows reports whether the table already says that owner sealed digest d in session.
func (t *sealTable) knows(d uint64, owner, session string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	id, ok := t.own[d]
	if !ok || t.owners[id] != owner {
		return false
	}
	return session == "" || t.sessions[session]&ownerBit(id) != 0
}

func ownerBit(id uint32) uint64 { return 1 << min(id, 63) }

// noteSession records that owner id sealed items in session (t.mu held).
func (t *sealTable) noteSession(session string, id uint32) {
	if mask, ok := t.sessions[session]; ok {
		t.sessions[session] = mask | ownerBit(id)
		return
	}
	if limit := max(t.cap/64, 16); len(t.sessRing) < limit {
		t.sessRing = append(t.sessRing, session)
	} else {
		delete(t.sessions, t.sessRing[t.sessNext])
		t.sessRing[t.sessNext] = session
		t.sessNext = (t.sessNext + 1) % limit
	}
	t.sessions[session] = ownerBit(id)
}

// foreignIn reports whether a request of the conversation session to owner may carry items
// another account sealed: whether another account sealed items of that conversation. When
// none did (a conversation that never rotated, or one the relay does not know), the request
// has nothing to leave out and costs a look-up. A request that names no conversation asks
// whether the table knows any item another account sealed.
func (t *sealTable) foreignIn(session, owner string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if session == "" {
		for i, n := range t.count {
			if n > 0 && t.owners[i] != owner {
				return true
			}
		}
		return false
	}
	mask := t.sessions[session]
	if id, ok := t.ids[owner]; ok && id < 63 {
		mask &^= ownerBit(id)
	}
	return mask != 0
}

// size is how many items the table remembers.
func (t *sealTable) size() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.own)
}

var encryptedKey = []byte(`"encrypted_content"`)

// sealedContent returns the raw encrypted_content string of an item (a top-level member of
// the item object), if it carries one.
func sealedContent(item []byte) ([]byte, bool) {
	if !bytes.Contains(item, encryptedKey) {
		return nil, false
	}
	o, err := payload.Parse(item)
	if err != nil {
		return nil, false
	}
	v, ok := o.Get("encrypted_content")
	if !ok || payload.KindOf(v) != payload.KindString || len(v) <= 2 {
		return nil, false
	}
	return v, true
}

// SetSealedTracking turns the tracking of sealed items on (the default) or off: off, the
// relay neither learns who sealed what nor leaves anything out (an account's refusal of sealed
// content is then relayed). `bench proxy` measures the tracking's cost with it.
func (s *Server) SetSealedTracking(on bool) { s.sealOff.Store(!on) }

// SealedItemBytes measures what remembering one sealed item costs: the heap a full table of
// the default size holds, per item (`bench proxy` prints it).
func SealedItemBytes() float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	t := newSealTable(defaultSealedItems)
	content := make([]byte, 0, 64)
	for i := range defaultSealedItems {
		content = strconv.AppendInt(append(content[:0], `"gAAAAB`...), int64(i), 10)
		t.learn("account", "", append(content, '"'))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(t)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(t.size())
}

// learnEvent records the sealed items of an upstream Responses event from m: the item of
// response.output_item.done, or the output of a final response. An event that carries no
// sealed content costs a comparison of its name, or one scan of its bytes.
func (x *exchange) learnEvent(m *member, name string, data []byte) {
	switch name {
	case "response.output_item.done", "response.completed", "response.incomplete":
		x.learnResponse(m, data)
	}
}

// learnEventOf is learnEvent for the events of one answer from m.
func (x *exchange) learnEventOf(m *member) func(sse.Event) {
	return func(ev sse.Event) { x.learnEvent(m, ev.Name, ev.Data) }
}

// learnResponse records the sealed content in an upstream's answer from m (an event, or a
// whole response): every "encrypted_content" string in it, found by one scan of its bytes,
// without parsing it. (Remembering a value nested deeper than an item costs a table entry and
// changes nothing: only items whose own encrypted_content it is are ever left out.)
func (x *exchange) learnResponse(m *member, data []byte) {
	if x.s.sealOff.Load() {
		return
	}
	for rest := data; ; {
		i := bytes.Index(rest, encryptedKey)
		if i < 0 {
			return
		}
		rest = rest[i+len(encryptedKey):]
		v, n := stringValue(rest)
		if n == 0 {
			continue
		}
		rest = rest[n:]
		if len(v) > 2 {
			x.s.seals.learn(m.key(), x.req.session, v)
		}
	}
}

// stringValue reads `: "..."` at the start of b (after a key) and returns the string with its
// quotes, as raw JSON, and how many bytes of b it took; n is 0 when b holds no string there.
func stringValue(b []byte) (v []byte, n int) {
	i := 0
	skip := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	skip()
	if i >= len(b) || b[i] != ':' {
		return nil, 0
	}
	i++
	skip()
	if i >= len(b) || b[i] != '"' {
		return nil, 0
	}
	start := i
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return b[start : i+1], i + 1
		}
	}
	return nil, 0
}

// sealedRefusal reports whether an upstream error says that it could not read sealed content:
// code invalid_encrypted_content, or (from upstreams that send code null) a message saying
// that encrypted content could not be verified or decrypted.
func sealedRefusal(code, msg string) bool {
	if code == "invalid_encrypted_content" {
		return true
	}
	l := strings.ToLower(msg)
	return strings.Contains(l, "encrypted content") &&
		(strings.Contains(l, "could not be verified") || strings.Contains(l, "could not be decrypted"))
}

// withoutSealed is the "input" override that leaves out of what m receives the items another
// account sealed (and, after m refused sealed content, every sealed item m is not known to have
// sealed), or false when nothing is to be left out. items returns the request's input items;
// it is called only when something may have to be left out (another account sealed items of
// the conversation), so a conversation that never rotated costs a map look-up. The override's
// value is built once per
// set of items left out, so that attempts with the same set share one body in the
// serialization cache.
func (x *exchange) withoutSealed(m *member, items func() [][]byte) (payload.Override, bool) {
	x.t.SealedOmitted = 0
	if x.s.sealOff.Load() {
		return payload.Override{}, false
	}
	strip := x.stripFor == m.key()
	if !strip && !x.s.seals.foreignIn(x.req.session, m.key()) {
		return payload.Override{}, false
	}
	all := items()
	var drop []int
	for i, it := range all {
		if x.foreignSealed(m, it, strip) {
			drop = append(drop, i)
		}
	}
	if len(drop) == 0 {
		return payload.Override{}, false
	}
	x.t.SealedOmitted = len(drop)
	for _, v := range x.stripped {
		if v.from == &all[0] && v.n == len(all) && slices.Equal(v.drop, drop) {
			return payload.Override{Key: "input", Value: v.input}, true
		}
	}
	kept := make([][]byte, 0, len(all)-len(drop))
	for i, it := range all {
		if _, gone := slices.BinarySearch(drop, i); !gone {
			kept = append(kept, it)
		}
	}
	v := strippedInput{from: &all[0], n: len(all), drop: drop, input: joinItems(kept)}
	x.stripped = append(x.stripped, v)
	return payload.Override{Key: "input", Value: v.input}, true
}

// strippedInput is an input built without some items (by index) of a list of n items whose
// first is from.
type strippedInput struct {
	from  *[]byte
	n     int
	drop  []int
	input []byte
}

// foreignSealed reports whether item is sealed content m must not receive: sealed by another
// account, or (strip) not known to be m's.
func (x *exchange) foreignSealed(m *member, item []byte, strip bool) bool {
	c, ok := sealedContent(item)
	if !ok {
		return false
	}
	owner, known := x.s.seals.owner(c)
	if known {
		return owner != m.key()
	}
	return strip
}

// refused is called when m refused sealed content: the sealed items m is not known to have
// sealed are remembered as refused (foreign to every account), and the request is to be
// retried on m without them. It reports false when there is nothing to leave out, or when
// this request already retried m so (the refusal is then the client's answer).
func (x *exchange) refused(m *member, items func() [][]byte) bool {
	if x.stripFor == m.key() || x.s.sealOff.Load() {
		return false
	}
	found := false
	for _, it := range items() {
		c, ok := sealedContent(it)
		if !ok {
			continue
		}
		if owner, known := x.s.seals.owner(c); known && owner == m.key() {
			continue
		}
		found = true
		x.s.seals.learn(refusedOwner, x.req.session, c)
	}
	if found {
		x.stripFor = m.key()
		x.t.SealedRetry = true
	}
	return found
}

// inputItemsOf returns the items of the request's Responses input (for a WebSocket turn, the
// conversation replayed), split once per request.
func (x *exchange) inputItemsOf() [][]byte {
	if x.items == nil {
		if x.turn != nil {
			x.items = append(slices.Clip(x.turn.base), x.turn.input...)
		} else if raw, ok := x.replayObj().Get("input"); ok {
			x.items, _ = inputItems(raw)
		}
		if x.items == nil {
			x.items = [][]byte{}
		}
	}
	return x.items
}
