package proxy

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Compaction. Codex compacts a long conversation remotely (compaction v2, openai/codex PR
// #22809; proxy/testdata/codex-0.171/compact-*): a normal /responses request whose input ends
// with {"type":"compaction_trigger"}, answered with one {"type":"compaction",
// "encrypted_content":...} item that stands for the whole history before it. Codex then sends
// that item, after the user messages it keeps, on every later request of the conversation. The
// item is sealed to the account that made it (sealed.go): another account refuses it, and a
// conversation sent there without it forgets everything the item stood for.
//
// So that the conversation's memory survives a rotation:
//   - the sealing account is tried first, and waited for when it rests within the hold bound
//     (preferSealer, route.go), as for multi-agent content;
//   - when another account serves, the relay re-makes the compaction there: it kept the request
//     that produced the item (the conversation the item stands for, as the client sent it),
//     sends it to the serving account first, and puts that account's own compaction in the
//     sealed item's place. What the client sent and keeps is never changed: only the upstream
//     body differs, and the trace counts it (compactionRemade);
//   - only when neither can be done (the kept request was forgotten, or the serving account
//     could not compact it) is the item left out, and the trace names it (sealedOmittedParts
//     "compaction"; the dashboard's request row says "compaction left out").
//
// What the relay keeps (compactionStore): for each conversation, the request of its latest
// compaction and of the one before it (the latest's input holds that item: re-making the latest
// on another account re-makes it first), zstd-compressed, bounded in bytes across the relay
// (Options.CompactionBudget; the least recently used is forgotten first); and, per kept request,
// the compaction each other account made of it, so that a conversation pays for a re-making
// once per account. With Options.CompactionDir the kept requests are files there instead of
// memory (mode 0600, in a folder only the user can open), each with the account that sealed
// it and its sealed value, so that a conversation resumed after a restart of the relay still
// has its memory: a relay that starts serving reads them back, and its seal table learns again
// who sealed each (the accounts' own re-makings are made again once).

// compactionType is the type member of a compaction item, as raw JSON.
var compactionType = []byte(`"compaction"`)

// DefaultCompactionBudget bounds the compressed requests the relay keeps to re-make
// compactions, all conversations together.
const DefaultCompactionBudget = 64 << 20

// keepPerConversation is how many compactions of one conversation the relay keeps the request
// of: the latest, and the one whose item the latest's input holds.
const keepPerConversation = 2

// remakeDepth bounds how deep a re-making follows compactions inside compactions.
const remakeDepth = keepPerConversation

// cannotRetry is how long the relay waits before asking again an account that could not
// compact a kept request (it answered the request as the client's mistake).
const cannotRetry = 10 * time.Minute

// compactionStore keeps the requests that produced compactions, by the seal table's digest of
// the compaction item's sealed value.
type compactionStore struct {
	dir      string    // where the kept requests are files ("": in memory)
	opened   sync.Once // the folder was read back (open)
	mu       sync.Mutex
	entries  map[uint64]*compacted
	sessions map[string][]uint64 // a conversation's kept compactions, the latest first
	lru      list.List           // of *compacted, the most recently used first
	size     int64               // compressed bytes kept
	budget   int64
	enc      *zstd.Encoder
	dec      *zstd.Decoder
}

// compacted is one kept compaction: the conversation it belongs to, the account that sealed it,
// the request that produced it (the HTTP form, compressed) and what each other account made of
// that request.
type compacted struct {
	digest  uint64
	session string
	sealer  string
	body    []byte                      // the compressed request, in memory (nil: in file)
	file    string                      // its file ("": in memory)
	size    int64                       // the compressed request's bytes
	remade  map[string]remadeCompaction // by account key
	el      *list.Element
}

// remadeCompaction is an account's own compaction of a kept request: its compaction item as
// the account sent it, or, when it could not make one, until when not to ask it again.
type remadeCompaction struct {
	item    []byte
	retryAt time.Time
}

func newCompactionStore(budget int64) *compactionStore {
	if budget <= 0 {
		budget = DefaultCompactionBudget
	}
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(DefaultMaxBody)+1))
	return &compactionStore{entries: map[uint64]*compacted{}, sessions: map[string][]uint64{}, budget: budget, enc: enc, dec: dec}
}

// keep records that sealer made the compaction whose sealed value (raw JSON) has digest d, in
// the conversation session, from the request body. A request too large for an eighth of the
// budget is not kept (its compaction can then only be left out).
func (cs *compactionStore) keep(d uint64, session, sealer string, value, body []byte) {
	cs.mu.Lock()
	e := cs.entries[d]
	if e != nil && e.sealer == sealer {
		cs.lru.MoveToFront(e.el) // kept already: a stream names its items twice (done, completed)
	}
	cs.mu.Unlock()
	if e != nil && e.sealer == sealer {
		return
	}
	z := cs.enc.EncodeAll(body, make([]byte, 0, len(body)/4))
	if int64(len(z)) > cs.budget/8 {
		return
	}
	e = &compacted{digest: d, session: session, sealer: sealer, body: z, size: int64(len(z))}
	if cs.dir != "" {
		if err := cs.write(e, value); err != nil {
			return // not kept: the compaction can then only be left out
		}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.add(e)
}

// add puts e in the store as its latest, forgetting what the conversation's bound and the
// budget say to (cs.mu held).
func (cs *compactionStore) add(e *compacted) {
	d, session := e.digest, e.session
	if old := cs.entries[d]; old != nil {
		if old.file == e.file {
			old.file = "" // the new one was written over it
		}
		cs.drop(old)
	}
	e.el = cs.lru.PushFront(e)
	cs.entries[d] = e
	cs.size += e.size
	if session != "" {
		kept := append([]uint64{d}, cs.sessions[session]...)
		for _, old := range kept[min(len(kept), keepPerConversation):] {
			if o := cs.entries[old]; o != nil {
				cs.drop(o)
			}
		}
		cs.sessions[session] = kept[:min(len(kept), keepPerConversation)]
	}
	for cs.size > cs.budget {
		cs.drop(cs.lru.Back().Value.(*compacted))
	}
}

// drop forgets e (cs.mu held).
func (cs *compactionStore) drop(e *compacted) {
	cs.lru.Remove(e.el)
	delete(cs.entries, e.digest)
	cs.size -= e.size
	if e.file != "" {
		os.Remove(e.file)
	}
	for _, it := range e.remade {
		cs.size -= int64(len(it.item))
	}
	if ds, ok := cs.sessions[e.session]; ok {
		kept := ds[:0]
		for _, d := range ds {
			if d != e.digest {
				kept = append(kept, d)
			}
		}
		if len(kept) == 0 {
			delete(cs.sessions, e.session)
		} else {
			cs.sessions[e.session] = kept
		}
	}
}

// request is the kept request of the compaction with digest d, decompressed, and its sealer;
// ok is false when none is kept.
func (cs *compactionStore) request(d uint64) (body []byte, sealer string, ok bool) {
	cs.mu.Lock()
	e := cs.entries[d]
	if e == nil {
		cs.mu.Unlock()
		return nil, "", false
	}
	cs.lru.MoveToFront(e.el)
	z, file, sealer := e.body, e.file, e.sealer
	cs.mu.Unlock()
	if file != "" {
		var err error
		if _, z, err = readCompaction(file, true); err != nil {
			return nil, "", false
		}
	}
	body, err := cs.dec.DecodeAll(z, nil)
	return body, sealer, err == nil
}

// remadeFor is account's own compaction of the kept compaction d: its item (nil: none), and
// whether the relay should ask the account for one now (a request is kept, and the account
// was not found unable lately).
func (cs *compactionStore) remadeFor(d uint64, account string, now time.Time) (item []byte, ask bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	e := cs.entries[d]
	if e == nil {
		return nil, false
	}
	r, ok := e.remade[account]
	if ok && r.item != nil {
		cs.lru.MoveToFront(e.el)
		return r.item, false
	}
	return nil, !ok || now.After(r.retryAt)
}

// setRemade records account's compaction item of the kept compaction d, or, with a nil item,
// that the account could not make one (not asked again before retryAt).
func (cs *compactionStore) setRemade(d uint64, account string, item []byte, retryAt time.Time) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	e := cs.entries[d]
	if e == nil {
		return
	}
	if e.remade == nil {
		e.remade = map[string]remadeCompaction{}
	}
	cs.size += int64(len(item)) - int64(len(e.remade[account].item))
	e.remade[account] = remadeCompaction{item: item, retryAt: retryAt}
	for cs.size > cs.budget && cs.lru.Len() > 1 {
		cs.drop(cs.lru.Back().Value.(*compacted))
	}
}

// usage is the compressed bytes kept and the compactions they belong to.
func (cs *compactionStore) usage() (bytes int64, entries int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.size, len(cs.entries)
}

// compactionValue is the sealed value of a compaction item (raw JSON string), or nil when item
// is no compaction item with one.
func compactionValue(item []byte) []byte {
	if !bytes.Contains(item, compactionType) {
		return nil
	}
	o, err := payload.Parse(item)
	if err != nil {
		return nil
	}
	if typ, _ := stringMember(o, "type"); typ != "compaction" {
		return nil
	}
	v, ok := o.Get("encrypted_content")
	if !ok || payload.KindOf(v) != payload.KindString || len(v) <= 2 {
		return nil
	}
	return v
}

// keepCompactions keeps the request that produced the compaction items of output (an output
// item, an event holding one, or an array of them) that m sealed: the conversation they stand
// for, for another account to re-make them from.
func (x *exchange) keepCompactions(m *member, output []byte) {
	var items [][]byte
	switch o, err := payload.Parse(output); {
	case err == nil:
		if it, ok := o.Get("item"); ok { // an event
			items = [][]byte{it}
		} else {
			items = [][]byte{output}
		}
	default:
		items, _ = inputItems(output)
	}
	var body []byte
	for _, it := range items {
		v := compactionValue(it)
		if v == nil {
			continue
		}
		if body == nil {
			body = x.body.whole().raw
		}
		x.s.compactions.keep(x.s.seals.digest(v), x.req.session, m.key(), v, body)
	}
}

// remakeCompactions makes, on m, its own compaction of each compaction item of the request's
// input that m cannot read and whose producing request the relay kept, so that the body built
// for m carries it in the sealed item's place (editSealed). It reports served when there is
// nothing (more) to make, or when m could not make it (the item is then left out); any other
// verdict is m's failure, judged as an attempt's is, and the request moves on.
func (x *exchange) remakeCompactions(m *member, tg *target) (verdict, string) {
	if x.s.sealOff.Load() || !x.s.seals.foreignIn(x.req.session, m.key()) {
		return served, "" // the cost of a conversation that never rotated: this look-up
	}
	if m.Kind == KindOpenAI && m.API == APIChat {
		return served, "" // a Chat Completions account makes no compaction: it is left out
	}
	return x.remakeIn(m, tg, x.body.items(), 0)
}

// remakeIn re-makes on m the foreign compactions among items, at the depth given.
func (x *exchange) remakeIn(m *member, tg *target, items [][]byte, depth int) (verdict, string) {
	for _, it := range items {
		v := compactionValue(it)
		if v == nil {
			continue
		}
		if foreign, _ := x.s.seals.foreignTo(v, m.key()); !foreign {
			continue
		}
		d := x.s.seals.digest(v)
		if _, ask := x.s.compactions.remadeFor(d, m.key(), x.s.now()); !ask {
			continue
		}
		if vd, why := x.remake(m, tg, d, depth); vd != served {
			return vd, why
		}
	}
	return served, ""
}

// remake asks m for its own compaction of the kept compaction d: the kept request, with the
// compactions it holds re-made first and what m cannot read of it left out, sent to m. The
// item m answers is kept for the conversation's next requests to m.
func (x *exchange) remake(m *member, tg *target, d uint64, depth int) (verdict, string) {
	body, _, ok := x.s.compactions.request(d)
	if !ok {
		return served, ""
	}
	obj, err := payload.Parse(body)
	if err != nil {
		return served, ""
	}
	raw, _ := obj.Get("input")
	items, _ := inputItems(raw)
	if depth < remakeDepth {
		if v, why := x.remakeIn(m, tg, items, depth+1); v != served {
			return v, why
		}
	}
	ov := x.modelOverride(tg)
	if edits := inputEdits(items, false, x.foreignFor(m), x.remadeFor(m)); len(edits) > 0 {
		ov = append(ov, payload.Override{Key: "input", Value: (&sealedParts{}).input(items, edits)})
	}
	tr := &accountTry{m: m, tg: tg, wire: responsesWire,
		body: builtBody{b: payload.Build(nil, obj, append(ov, backendRules(m)...))}}
	x.sealed.remaking = true
	defer func() { x.sealed.remaking = false }()
	for refreshed := false; ; refreshed = true {
		v, why, item := x.askCompaction(tr)
		if n := len(x.t.Attempts); n > 0 && x.t.Attempts[n-1].Account == m.Name {
			x.t.Attempts[n-1].Kind = AttemptCompaction
		}
		switch v {
		case served:
			retry := time.Time{}
			if item == nil {
				retry = x.s.now().Add(cannotRetry)
				x.s.log.Info("the account could not re-make the conversation's compaction: it is left out", "id", x.t.ID,
					"account", m.Name, "reason", why)
			} else {
				x.s.seals.learn(m.key(), x.req.session, compactionValue(item))
			}
			x.s.compactions.setRemade(d, m.key(), item, retry)
			return served, ""
		case resealed:
			x.s.compactions.setRemade(d, m.key(), nil, x.s.now().Add(cannotRetry))
			return served, ""
		case unauthorized:
			// A sign-in can be renewed: refresh once, then ask again.
			if r, ok := m.Credentials.(Refresher); ok && !refreshed {
				if _, err := r.Refresh(x.r.Context(), tr.cred); err == nil {
					continue
				}
			}
		}
		return v, "re-making the conversation's compaction: " + why
	}
}

// AttemptCompaction is the Kind of an attempt that re-made a conversation's compaction on the
// account before the request was sent to it.
const AttemptCompaction = "compaction"

// askCompaction sends a compaction request to its account and returns the compaction item
// it answered (nil with served: the account answered, but with no compaction, or refused the
// request as the client's mistake).
func (x *exchange) askCompaction(tr *accountTry) (verdict, string, []byte) {
	v, why, a := x.attempt(tr)
	if v != served {
		return v, why, nil
	}
	if a.resp.StatusCode/100 != 2 {
		a.close()
		return served, why, nil
	}
	if v, why = x.await(tr, a); v != served {
		return v, why, nil
	}
	defer a.close()
	out := a.plain
	if out == nil {
		final := a.final
		if !a.whole {
			var err error
			if final, err = collectFinal(a.rd, a.first, nil); err != nil {
				return transient, "the upstream stream ended before response.completed", nil
			}
		}
		o, _ := payload.Parse(final.Data)
		if r := responseObject(o); r != nil {
			out, _ = r.Get("output")
		}
	} else if o, err := payload.Parse(out); err == nil {
		out, _ = o.Get("output")
	}
	items, _ := inputItems(out)
	for _, it := range items {
		if compactionValue(it) != nil {
			return served, "", bytes.Clone(it)
		}
	}
	return served, "the account answered without a compaction", nil
}

// Compaction v1: POST /v1/responses/compact, which SDKs and older clients still call (Codex
// 0.171 never does: testdata/codex-0.171/compact-*). A Responses body, answered whole with
// {"id","object":"response.compaction","created_at","output","usage"}, whose output is the new
// history: the user messages kept and the compaction item. A Responses API key gets it as it
// came, on its own v1 route (compactWire). The ChatGPT backend compacts only the v2 way
// (chatgpt.com answered v1 404 in August 2026: codex-lb PR #1705), so a ChatGPT account gets the
// body as a v2 compaction, the trigger after its input, and the answer is put in v1's shape
// (compactOverV2). A Chat Completions account cannot compact.

var errNoChatCompaction = errors.New("a Chat Completions account cannot compact a conversation")

// compactionTrigger ends the input of a v2 compaction request.
var compactionTrigger = []byte(`{"type":"compaction_trigger"}`)

// compactOverV2Body is the v2 compaction request of a v1 body: its input (a string is a user
// message) with what the account cannot read left out and the trigger after it, streamed and
// unstored.
func compactOverV2Body(x *exchange, tr *accountTry) (builtBody, error) {
	raw, _ := x.req.obj.Get("input")
	var items [][]byte
	switch payload.KindOf(raw) {
	case payload.KindString:
		items = [][]byte{payload.Build(nil, &payload.Object{}, []payload.Override{
			{Key: "type", Value: []byte(`"message"`)}, {Key: "role", Value: []byte(`"user"`)}, {Key: "content", Value: raw}})}
	case payload.KindArray:
		items = x.body.items()
	default:
		return builtBody{}, errors.New("a compaction needs an input: a string or an array of items")
	}
	if in, ok := x.inputFor(tr.m, func() [][]byte { return items }, false); ok {
		items, _ = inputItems(in.Value)
	}
	ov := append(x.modelOverride(tr.tg), payload.Override{Key: "input", Value: joinItems(items, [][]byte{compactionTrigger})})
	return x.build(x.body.whole(), "", append(ov, backendRules(tr.m)...)), nil
}

// answerWholeAsCompact answers a v1 compaction from the v2 answer's final response: the user
// messages of the request's input, then the compaction item the account made.
func (x *exchange) answerWholeAsCompact(a *answer) {
	resp, ok := x.finalResponse(a)
	if !ok {
		return
	}
	o, err := payload.Parse(resp)
	if err != nil {
		x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "server_error",
			Message: "the upstream's compaction is not a response object"}, OutcomeError)
		return
	}
	var output [][]byte
	for _, it := range x.body.items() {
		if isUserMessage(it) {
			output = append(output, it)
		}
	}
	raw, _ := o.Get("output")
	out, _ := inputItems(raw)
	made := false
	for _, it := range out {
		if compactionValue(it) != nil {
			output, made = append(output, it), true
		}
	}
	if !made {
		x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "server_error",
			Message: "the upstream answered the compaction without a compaction item"}, OutcomeError)
		return
	}
	ov := []payload.Override{{Key: "object", Value: []byte(`"response.compaction"`)}, {Key: "output", Value: joinItems(output)}}
	v1 := &payload.Object{}
	for _, k := range []string{"id", "created_at", "usage"} {
		if v, ok := o.Get(k); ok {
			ov = append(ov, payload.Override{Key: k, Value: v})
		}
	}
	// id, object, created_at, output, usage: in the API's order.
	slices.SortStableFunc(ov, func(a, b payload.Override) int { return v1Order[a.Key] - v1Order[b.Key] })
	x.writeJSONBody(payload.Build(nil, v1, ov))
}

var v1Order = map[string]int{"id": 0, "object": 1, "created_at": 2, "output": 3, "usage": 4}

// isUserMessage reports whether an input item is a message of the user's (the short form
// {"role":"user",...} included).
func isUserMessage(item []byte) bool {
	o, err := payload.Parse(item)
	if err != nil {
		return false
	}
	typ, _ := stringMember(o, "type")
	role, _ := stringMember(o, "role")
	return (typ == "message" || typ == "") && role == "user"
}

// A kept request's file: one line of JSON (compactionHeader), then the compressed request. Its
// name is a digest of the compaction's sealed value, stable across restarts (the seal table's
// digests are not).

type compactionHeader struct {
	Sealer  string          `json:"sealer"`
	Session string          `json:"session"`
	Value   json.RawMessage `json:"value"` // the compaction item's sealed value
	Made    time.Time       `json:"made"`
}

const compactionExt = ".compaction"

// maxCompactionHeader bounds a file's first line (a sealed value is a few kilobytes).
const maxCompactionHeader = 1 << 20

// write writes e's file, atomically, under a name made of value, and records it in e, whose
// body then lives in the file alone.
func (cs *compactionStore) write(e *compacted, value []byte) error {
	sum := sha256.Sum256(value)
	head, _ := json.Marshal(compactionHeader{Sealer: e.sealer, Session: e.session, Value: value, Made: time.Now().UTC()})
	f, err := os.CreateTemp(cs.dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(append(append(head, '\n'), e.body...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	name := filepath.Join(cs.dir, hex.EncodeToString(sum[:16])+compactionExt)
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	e.file, e.body = name, nil
	return nil
}

// readCompaction reads a kept request's file: its header, and with body its compressed
// request. A file that is not a regular one of the relay's making is refused.
func readCompaction(name string, body bool) (compactionHeader, []byte, error) {
	var h compactionHeader
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return h, nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return h, nil, errors.New("not a regular file")
	}
	first := make([]byte, 64<<10)
	n, err := io.ReadFull(f, first)
	first = first[:n]
	i := bytes.IndexByte(first, '\n')
	for i < 0 && err == nil && len(first) < maxCompactionHeader { // a long sealed value
		more := make([]byte, len(first))
		n, err = io.ReadFull(f, more)
		first = append(first, more[:n]...)
		i = bytes.IndexByte(first, '\n')
	}
	if i < 0 {
		return h, nil, errors.New("not a kept compaction")
	}
	if err := json.Unmarshal(first[:i], &h); err != nil || h.Sealer == "" || payload.KindOf(h.Value) != payload.KindString {
		return h, nil, errors.New("not a kept compaction")
	}
	if !body {
		return h, nil, nil
	}
	rest, err := io.ReadAll(io.LimitReader(f, DefaultMaxBody))
	return h, append(first[i+1:], rest...), err
}

// open makes the store keep its requests in dir (made, mode 0700, if missing) and reads back
// what an earlier relay kept there, the most recent last, within the budget: each is told to
// learn (who sealed which value, in which conversation). Once; "" keeps them in memory.
func (cs *compactionStore) open(dir string, learn func(sealer, session string, value []byte) uint64) error {
	var err error
	cs.opened.Do(func() {
		if dir == "" {
			return
		}
		if err = os.MkdirAll(dir, 0o700); err != nil {
			return
		}
		var names []string
		if names, err = filepath.Glob(filepath.Join(dir, "*"+compactionExt)); err != nil {
			return
		}
		type kept struct {
			name string
			h    compactionHeader
			size int64
		}
		var all []kept
		for _, n := range names {
			st, serr := os.Lstat(n)
			if serr != nil || !st.Mode().IsRegular() {
				continue
			}
			h, _, rerr := readCompaction(n, false)
			if rerr != nil {
				os.Remove(n) // not one of ours, or cut short: of no use
				continue
			}
			all = append(all, kept{n, h, st.Size()})
		}
		slices.SortFunc(all, func(a, b kept) int { return a.h.Made.Compare(b.h.Made) })
		cs.mu.Lock()
		defer cs.mu.Unlock()
		cs.dir = dir
		for _, k := range all {
			d := learn(k.h.Sealer, k.h.Session, k.h.Value)
			cs.add(&compacted{digest: d, session: k.h.Session, sealer: k.h.Sealer, file: k.name, size: k.size})
		}
	})
	return err
}
