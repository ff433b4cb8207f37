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

// Sealed parts. The Codex CLI asks for reasoning.encrypted_content and replays every reasoning
// item it received, with that content, on each later request of the conversation. The content
// is sealed to the account that produced it: another account answers 400
// invalid_encrypted_content, and so would every retry. The same holds for a remote-compaction
// item, for the sealed arguments of a multi-agent function call (the collaboration tools':
// the model's call names them in encrypted_function_args, e.g. ["message"], and the values
// inside its arguments are sealed; Codex replays the call without that list) and for any
// content block of type encrypted_content, at any depth (a sub-agent's agent_message carries
// the value its parent's spawn_agent call sealed): another account answers 400
// invalid_request_body "Encrypted function output content could not be decrypted or decoded."
//
// The relay learns from the output items it relays which account sealed each such value (a
// digest of the value, not the value; never from anything else in an answer, which may echo
// what the client sent), and an account receives the conversation without the parts another
// account sealed: a reasoning or compaction item whose content is foreign is left out whole
// (it is useless without it); a function call whose arguments are foreign is left out with its
// outputs (the backend refuses an output without its call); a foreign content block is left
// out of the item that holds it, which keeps its readable parts (an agent message without its
// sealed task still says who wrote to whom). Parts the serving account sealed itself, and
// parts nobody is known to have sealed, go as they are. What the client sent and keeps is
// never changed: only the upstream body differs, and the trace counts and names what it left
// out (sealedOmitted, sealedOmittedParts).
//
// Where the relay cannot know (after a restart, a part it never saw), an upstream's refusal
// of sealed content is retried once on the same account without every sealed part it is not
// known to have sealed (sealedRetry); the relay then remembers that this account refused
// those parts (only this one: the account that sealed them still gets them), so that a
// conversation pays that extra round trip once per account.

// defaultSealedItems bounds how many sealed values the relay remembers (about 40 bytes each);
// past it the oldest are forgotten, and a value forgotten that goes to a foreign account costs
// one strip-and-retry.
const defaultSealedItems = 1 << 18

// sealTable remembers which account sealed each value the relay relayed, by a 64-bit digest
// of it, and which accounts refused a value nobody is known to have sealed. Bounded: a ring of
// digests in arrival order evicts the oldest.
type sealTable struct {
	seed maphash.Seed
	mu   sync.RWMutex
	own  map[uint64]sealEntry
	ring []uint64 // digests in arrival order (len = capacity once full)
	next int      // the ring's oldest entry once full
	cap  int
	// owners are the accounts' keys by index; count how many entries each owns, and refusals
	// how many each refused.
	owners   []string
	ids      map[string]uint32
	count    []int
	refusals []int
	// sessions has, for each conversation (the request's session) the relay saw sealed values
	// in, a bit per owner index that sealed some and a bit per index that refused some (bit 63
	// for indexes past it); sessRing orders them for eviction, at the table's capacity / 64.
	sessions map[string]sessionSeals
	sessRing []string
	sessNext int
}

// sealEntry is what the table knows of one sealed value: who sealed it (owner is the index
// plus one; 0: nobody known) and, a bit per index (bit 31 for indexes past it), who refused it.
type sealEntry struct {
	owner   uint32
	refused uint32
}

func refusalBit(id uint32) uint32 { return 1 << min(id, 31) }

type sessionSeals struct{ sealed, refused uint64 }

func newSealTable(capacity int) *sealTable {
	if capacity <= 0 {
		capacity = defaultSealedItems
	}
	return &sealTable{seed: maphash.MakeSeed(), own: map[uint64]sealEntry{}, cap: capacity, ids: map[string]uint32{},
		sessions: map[string]sessionSeals{}}
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

// id is the index of account (t.mu held for writing).
func (t *sealTable) id(account string) uint32 {
	id, ok := t.ids[account]
	if !ok {
		id = uint32(len(t.owners))
		t.owners = append(t.owners, account)
		t.count = append(t.count, 0)
		t.refusals = append(t.refusals, 0)
		t.ids[account] = id
	}
	return id
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
	id := t.id(owner)
	if session != "" {
		t.noteSession(session, id, false)
	}
	e, known := t.own[d]
	if !known {
		t.push(d)
	}
	if e.owner != 0 {
		// Known: the latest word wins (an account that served it back owns it).
		t.count[e.owner-1]--
	}
	t.forgetRefusals(e)
	t.own[d] = sealEntry{owner: id + 1}
	t.count[id]++
}

// refuse records that account refused content, which nobody is known to have sealed, in the
// conversation session: from now on it is foreign to that account, and to that account only.
func (t *sealTable) refuse(account, session string, content []byte) {
	d := t.digest(content)
	t.mu.Lock()
	defer t.mu.Unlock()
	id := t.id(account)
	if session != "" {
		t.noteSession(session, id, true)
	}
	e, known := t.own[d]
	if !known {
		t.push(d)
	}
	if e.refused&refusalBit(id) == 0 {
		e.refused |= refusalBit(id)
		t.refusals[id]++
	}
	t.own[d] = e
}

// push adds digest d to the ring, evicting the oldest entry once full (t.mu held).
func (t *sealTable) push(d uint64) {
	if len(t.ring) < t.cap {
		t.ring = append(t.ring, d)
		return
	}
	old := t.ring[t.next]
	if e, ok := t.own[old]; ok {
		if e.owner != 0 {
			t.count[e.owner-1]--
		}
		t.forgetRefusals(e)
		delete(t.own, old)
	}
	t.ring[t.next] = d
	t.next = (t.next + 1) % t.cap
}

// forgetRefusals takes e's refusals off the accounts' counts (t.mu held).
func (t *sealTable) forgetRefusals(e sealEntry) {
	for id := range t.refusals {
		if e.refused&refusalBit(uint32(id)) != 0 && t.refusals[id] > 0 {
			t.refusals[id]--
		}
	}
}

// owner is the account that sealed content, if the relay knows.
func (t *sealTable) owner(content []byte) (string, bool) {
	d := t.digest(content)
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.own[d]
	if !ok || e.owner == 0 {
		return "", false
	}
	return t.owners[e.owner-1], true
}

// foreignTo reports whether content is foreign to account: sealed by another account, or
// refused by this one; known says whether the table knows anything of it for account.
func (t *sealTable) foreignTo(content []byte, account string) (foreign, known bool) {
	d := t.digest(content)
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.own[d]
	if !ok {
		return false, false
	}
	if e.owner != 0 {
		return t.owners[e.owner-1] != account, true
	}
	if id, ok := t.ids[account]; ok && e.refused&refusalBit(id) != 0 {
		return true, true
	}
	return false, false
}

// knows reports whether the table already says that owner sealed digest d in session.
func (t *sealTable) knows(d uint64, owner, session string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.own[d]
	if !ok || e.owner == 0 || t.owners[e.owner-1] != owner {
		return false
	}
	return session == "" || t.sessions[session].sealed&ownerBit(e.owner-1) != 0
}

func ownerBit(id uint32) uint64 { return 1 << min(id, 63) }

// noteSession records that owner id sealed (or refused) values in session (t.mu held).
func (t *sealTable) noteSession(session string, id uint32, refused bool) {
	ss, ok := t.sessions[session]
	if !ok {
		if limit := max(t.cap/64, 16); len(t.sessRing) < limit {
			t.sessRing = append(t.sessRing, session)
		} else {
			delete(t.sessions, t.sessRing[t.sessNext])
			t.sessRing[t.sessNext] = session
			t.sessNext = (t.sessNext + 1) % limit
		}
	}
	if refused {
		ss.refused |= ownerBit(id)
	} else {
		ss.sealed |= ownerBit(id)
	}
	t.sessions[session] = ss
}

// foreignIn reports whether a request of the conversation session to owner may carry values
// foreign to it: whether another account sealed values of that conversation, or owner refused
// some. When none did (a conversation that never rotated, or one the relay does not know), the
// request has nothing to leave out and costs a look-up. A request that names no conversation
// asks whether the table knows any value foreign to owner.
func (t *sealTable) foreignIn(session, owner string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	id, known := t.ids[owner]
	if session == "" {
		for i, n := range t.count {
			if n > 0 && t.owners[i] != owner {
				return true
			}
		}
		return known && t.refusals[id] > 0
	}
	ss := t.sessions[session]
	if known && id < 63 {
		ss.sealed &^= ownerBit(id)
	}
	return ss.sealed != 0 || (known && ss.refused&ownerBit(id) != 0)
}

// size is how many values the table remembers.
func (t *sealTable) size() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.own)
}

var (
	encryptedKey  = []byte(`"encrypted_content"`)
	sealedArgsKey = []byte(`"encrypted_function_args"`)
	// sealedPrefix starts every sealed value the backends issue (Fernet tokens): a call's
	// arguments replayed without their encrypted_function_args list are known sealed by it.
	sealedPrefix = []byte(`gAAAA`)
)

// mayBeSealed reports whether an item may hold sealed parts: a scan of its bytes.
func mayBeSealed(item []byte) bool {
	return bytes.Contains(item, encryptedKey) || bytes.Contains(item, sealedPrefix)
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

// learnEvent records what an upstream Responses event from m says: the sealed parts of the
// item of response.output_item.done or of the output of a final response, and the turn state
// and model reroute of response.metadata (turn.go). An event that carries none of them costs a
// comparison of its name, or one scan of its bytes.
func (x *exchange) learnEvent(m *member, name string, data []byte) {
	switch name {
	case "response.output_item.done":
		// The event's one member that can hold sealed content is its item: a scan of the
		// event is a scan of the item, and only a call naming sealed arguments is parsed.
		if x.s.sealOff.Load() || !mayBeSealed(data) {
			return
		}
		x.learnSealed(m, data)
	case "response.completed", "response.incomplete":
		if mayBeSealed(data) {
			o, _ := payload.Parse(data)
			x.learnOutput(m, responseObject(o))
		}
	case "response.metadata":
		x.learnMetadata(m, data)
	}
}

// learnEventOf is learnEvent for the events of one answer from m.
func (x *exchange) learnEventOf(m *member) func(sse.Event) {
	return func(ev sse.Event) { x.learnEvent(m, ev.Name, ev.Data) }
}

// learnResponse records the sealed parts of a whole response from m (a non-streamed answer).
func (x *exchange) learnResponse(m *member, data []byte) {
	if !mayBeSealed(data) {
		return
	}
	o, _ := payload.Parse(data)
	x.learnOutput(m, o)
}

// learnOutput records the sealed parts of a response's output items (nil: none).
func (x *exchange) learnOutput(m *member, resp *payload.Object) {
	if resp == nil {
		return
	}
	out, _ := resp.Get("output")
	x.learnSealed(m, out)
}

// learnSealed records as m's every sealed value in output (an output item, an event holding
// one, or an array of them), by scans of its bytes: every encrypted_content and, where a call
// names sealed arguments (encrypted_function_args), the sealed tokens in its arguments.
func (x *exchange) learnSealed(m *member, output []byte) {
	if x.s.sealOff.Load() {
		return
	}
	learn := func(v []byte) { x.s.seals.learn(m.key(), x.req.session, v) }
	sealedContents(output, learn)
	if bytes.Contains(output, sealedArgsKey) {
		sealedTokens(output, learn)
	}
}

// sealedTokens calls f with every sealed token (as a raw JSON string) quoted inside a JSON
// string of b: a call's arguments are a JSON string, and a sealed value in them reads
// \"gAAAA...\" (its characters, base64url, need no escape).
func sealedTokens(b []byte, f func(v []byte)) {
	open := append([]byte(`\"`), sealedPrefix...)
	for rest := b; ; {
		i := bytes.Index(rest, open)
		if i < 0 {
			return
		}
		rest = rest[i+2:]
		n := 0
		for n < len(rest) && isTokenByte(rest[n]) {
			n++
		}
		if n < len(rest) && rest[n] == '\\' {
			f(payload.AppendString(nil, string(rest[:n])))
		}
		rest = rest[n:]
	}
}

func isTokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '='
}

// sealedIn calls f with every sealed value of an input item, as raw JSON strings: every
// non-empty encrypted_content string at any depth (one scan of the bytes: a member name
// cannot occur unescaped inside a JSON string), and a function call's sealed arguments.
func sealedIn(item []byte, f func(v []byte)) {
	sealedContents(item, f)
	if bytes.Contains(item, sealedPrefix) && bytes.Contains(item, functionCallType) {
		if o, err := payload.Parse(item); err == nil {
			for _, v := range sealedArgs(o) {
				f(v)
			}
		}
	}
}

// sealedContents calls f with every non-empty encrypted_content string in b, at any depth.
func sealedContents(b []byte, f func(v []byte)) {
	for rest := b; ; {
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
			f(v)
		}
	}
}

// sealedArgs are the sealed values (raw JSON strings) in the arguments of a function call o:
// the members its encrypted_function_args list names or, without the list (Codex replays a
// call without it), every string member that reads as a sealed token.
func sealedArgs(o *payload.Object) [][]byte {
	if t, _ := stringMember(o, "type"); t != "function_call" {
		return nil
	}
	args, ok := stringMember(o, "arguments")
	if !ok || !strings.Contains(args, string(sealedPrefix)) {
		return nil
	}
	// The list, as raw JSON: ["message"]; a name is in it when its quoted form is.
	names, listed := o.Get("encrypted_function_args")
	listed = listed && payload.KindOf(names) == payload.KindArray && len(names) > 2
	ao, err := payload.Parse([]byte(args))
	if err != nil {
		return nil
	}
	var out [][]byte
	for _, mem := range ao.Members {
		v := mem.Value
		if payload.KindOf(v) != payload.KindString || len(v) <= 2 {
			continue
		}
		if listed && bytes.Contains(names, payload.AppendString(nil, mem.Key)) || !listed && bytes.HasPrefix(v[1:], sealedPrefix) {
			out = append(out, v)
		}
	}
	return out
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
// code invalid_encrypted_content; or a message saying that encrypted content could not be
// verified or decrypted (upstreams that send code null), or that encrypted function content
// could not be decrypted or decoded (multi-agent content, code invalid_request_body).
func sealedRefusal(code, msg string) bool {
	if code == "invalid_encrypted_content" {
		return true
	}
	l := strings.ToLower(msg)
	if !strings.Contains(l, "encrypted") {
		return false
	}
	return strings.Contains(l, "could not be verified") || strings.Contains(l, "could not be decrypted") ||
		strings.Contains(l, "could not be decoded")
}

// inputFor is the "input" override for m: the request's input without what m must not or
// cannot receive, or false when m receives it as it is. Left out are the sealed parts another
// account sealed (and, after m refused sealed content, every sealed part m is not known to
// have sealed) and, for the classic form of a Lite request (classic), the additional_tools
// items. items returns the input items; it is called only when something may have to be left
// out, so a conversation that never rotated costs a map look-up. The override's value is built
// once per set of edits, so that attempts with the same set share one body in the
// serialization cache.
func (x *exchange) inputFor(m *member, items func() [][]byte, classic bool) (payload.Override, bool) {
	x.t.SealedOmitted, x.t.SealedOmittedParts = 0, nil
	strip := x.sealed.stripFor == m.key()
	sealing := !x.s.sealOff.Load() && (strip || x.s.seals.foreignIn(x.req.session, m.key()))
	if !sealing && !classic {
		return payload.Override{}, false
	}
	all := items()
	if len(all) == 0 {
		return payload.Override{}, false
	}
	foreign := func(v []byte) bool {
		f, known := x.s.seals.foreignTo(v, m.key())
		return f || (!known && strip)
	}
	var edits []itemEdit
	var calls []string
	for i, it := range all {
		if classic && isAdditionalTools(it) {
			edits = append(edits, itemEdit{i: i})
			continue
		}
		if !sealing || !mayBeSealed(it) {
			continue
		}
		e, call := editSealed(it, foreign)
		if e.kind == "" {
			continue
		}
		e.i = i
		edits = append(edits, e)
		if call != "" {
			calls = append(calls, call)
		}
	}
	if len(calls) > 0 {
		// The outputs of the calls left out go with them.
		for i, it := range all {
			if kind, call := callOutput(it); call != "" && slices.Contains(calls, call) {
				edits = append(edits, itemEdit{i: i, kind: kind, sealed: true})
			}
		}
		slices.SortFunc(edits, func(a, b itemEdit) int { return a.i - b.i })
	}
	if len(edits) == 0 {
		return payload.Override{}, false
	}
	for _, e := range edits {
		if !e.sealed {
			continue
		}
		if x.t.SealedOmittedParts == nil {
			x.t.SealedOmittedParts = map[string]int{}
		}
		n := max(e.blocks, 1)
		x.t.SealedOmitted += n
		x.t.SealedOmittedParts[e.kind] += n
	}
	for _, v := range x.sealed.stripped {
		if v.from == &all[0] && v.n == len(all) && slices.EqualFunc(v.edits, edits, itemEdit.same) {
			return payload.Override{Key: "input", Value: v.input}, true
		}
	}
	kept := make([][]byte, 0, len(all))
	for i, it := range all {
		j, found := slices.BinarySearchFunc(edits, i, func(e itemEdit, i int) int { return e.i - i })
		switch {
		case !found:
			kept = append(kept, it)
		case edits[j].item != nil:
			kept = append(kept, edits[j].item)
		}
	}
	v := strippedInput{from: &all[0], n: len(all), edits: edits, input: joinItems(kept)}
	x.sealed.stripped = append(x.sealed.stripped, v)
	return payload.Override{Key: "input", Value: v.input}, true
}

// itemEdit is what becomes of input item i: left out (item nil) or replaced by item; kind
// names what was left out (the item's type, or "TYPE content" for blocks left out of it),
// sealed says it was left out for its sealed parts and blocks counts the blocks.
type itemEdit struct {
	i      int
	item   []byte
	kind   string
	sealed bool
	blocks int
}

func (a itemEdit) same(b itemEdit) bool { return a.i == b.i && bytes.Equal(a.item, b.item) }

// sealedParts is what a request worked out of the sealed parts it carries: stripped the
// inputs built without foreign sealed parts (one per set of edits), stripFor the account that
// refused sealed content and is retried without every sealed part it did not seal, and sealer
// the account that sealed its multi-agent content (route.go; nil: not worked out yet).
type sealedParts struct {
	stripped []strippedInput
	stripFor string
	sealer   *string
}

// strippedInput is an input built with edits of a list of n items whose first is from.
type strippedInput struct {
	from  *[]byte
	n     int
	edits []itemEdit
	input []byte
}

// editSealed decides what becomes of an input item whose sealed parts foreign says are
// foreign: an item whose own encrypted_content is foreign is left out; a function call whose
// sealed arguments are is left out, and its call_id comes back (its outputs follow it); else
// the content blocks whose encrypted_content is foreign are left out of the item, at any
// depth (an item with nothing left is left out). A zero kind: nothing changes.
func editSealed(item []byte, foreign func([]byte) bool) (e itemEdit, call string) {
	o, err := payload.Parse(item)
	if err != nil {
		return itemEdit{}, ""
	}
	typ, _ := stringMember(o, "type")
	if typ == "" {
		typ = "item"
	}
	if v, ok := o.Get("encrypted_content"); ok && payload.KindOf(v) == payload.KindString && len(v) > 2 && foreign(v) {
		return itemEdit{kind: typ, sealed: true}, ""
	}
	if slices.ContainsFunc(sealedArgs(o), foreign) {
		call, _ = stringMember(o, "call_id")
		return itemEdit{kind: typ, sealed: true}, call
	}
	if !bytes.Contains(item, encryptedKey) {
		return itemEdit{}, ""
	}
	out, removed, empty := withoutForeignBlocks(o, foreign)
	if removed == 0 {
		return itemEdit{}, ""
	}
	e = itemEdit{kind: typ + " content", sealed: true, blocks: removed}
	if !empty {
		e.item = out
	}
	return e, ""
}

// withoutForeignBlocks is o without the objects, in any array at any depth, whose own
// encrypted_content is foreign; removed counts them and empty says that an array o holds
// directly lost every element.
func withoutForeignBlocks(o *payload.Object, foreign func([]byte) bool) (out []byte, removed int, empty bool) {
	var ov []payload.Override
	for _, mem := range o.Members {
		v := mem.Value
		if !bytes.Contains(v, encryptedKey) {
			continue
		}
		switch payload.KindOf(v) {
		case payload.KindArray:
			els, err := payload.Elements(v)
			if err != nil {
				continue
			}
			kept := els[:0:0]
			n := 0
			for _, el := range els {
				if payload.KindOf(el) == payload.KindObject {
					if eo, err := payload.Parse(el); err == nil {
						if c, ok := eo.Get("encrypted_content"); ok && payload.KindOf(c) == payload.KindString && len(c) > 2 && foreign(c) {
							n++
							continue
						}
						if b, r, _ := withoutForeignBlocks(eo, foreign); r > 0 {
							n += r
							el = b
						}
					}
				}
				kept = append(kept, el)
			}
			if n > 0 {
				removed += n
				empty = empty || len(kept) == 0
				ov = append(ov, payload.Override{Key: mem.Key, Value: joinItems(kept)})
			}
		case payload.KindObject:
			if eo, err := payload.Parse(v); err == nil {
				if b, r, _ := withoutForeignBlocks(eo, foreign); r > 0 {
					removed += r
					ov = append(ov, payload.Override{Key: mem.Key, Value: b})
				}
			}
		}
	}
	if removed == 0 {
		return nil, 0, false
	}
	return payload.Build(nil, o, ov), removed, empty
}

// callOutput is, for an item that is a tool call's output, its type and call_id.
func callOutput(item []byte) (kind, call string) {
	if !bytes.Contains(item, []byte(`_output"`)) {
		return "", ""
	}
	o, err := payload.Parse(item)
	if err != nil {
		return "", ""
	}
	kind, _ = stringMember(o, "type")
	if !strings.HasSuffix(kind, "_call_output") {
		return "", ""
	}
	call, _ = stringMember(o, "call_id")
	return kind, call
}

// refused is called when m refused sealed content: the sealed values m is not known to have
// sealed are remembered as refused by m (foreign to m, and only to m), and the request is to
// be retried on m without them. It reports false when there is nothing to leave out, or when
// this request already retried m so (the refusal is then the client's answer).
func (x *exchange) refused(m *member, items func() [][]byte) bool {
	if x.sealed.stripFor == m.key() || x.s.sealOff.Load() {
		return false
	}
	found := false
	for _, it := range items() {
		if !mayBeSealed(it) {
			continue
		}
		sealedIn(it, func(v []byte) {
			if owner, known := x.s.seals.owner(v); known && owner == m.key() {
				return
			}
			found = true
			x.s.seals.refuse(m.key(), x.req.session, v)
		})
	}
	if found {
		x.sealed.stripFor = m.key()
		x.t.SealedRetry = true
	}
	return found
}
