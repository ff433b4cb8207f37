package proxy

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

import (
	"bytes"
	"strconv"
	"time"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// compactionType is the type member of a compaction item, as raw JSON.
var compactionType = []byte(`"compaction"`)

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
	var parents [][]byte
	for _, it := range items {
		v := compactionValue(it)
		if v == nil {
			continue
		}
		if body == nil {
			body = x.body.whole().raw
			for _, in := range x.body.items() {
				if p := compactionValue(in); p != nil {
					parents = append(parents, p)
				}
			}
		}
		x.s.compactions.keep(x.s.seals.digest(v), x.req.session, m.Key(), v, body, parents)
	}
}

// remakeCompactions makes, on m, its own compaction of each compaction item of the request's
// input that m cannot read and whose producing request the relay kept, so that the body built
// for m carries it in the sealed item's place (editSealed). It reports served when there is
// nothing (more) to make, or when m could not make it (the item is then left out); any other
// verdict is m's failure, judged as an attempt's is, and the request moves on.
func (x *exchange) remakeCompactions(m *member, tg *target) (verdict, string) {
	if x.req.route != routeResponses || x.s.sealOff.Load() || !x.s.seals.foreignIn(x.req.session, m.Key()) {
		return served, "" // the cost of a conversation that never rotated: this look-up
	}
	return x.remakeIn(m, tg, x.body.items(), 0)
}

// makerKey is the account key m's compactions are kept under: its own, or, for a Chat
// Completions account, whose compactions the relay makes (relaycompact.go), the relay's, which
// every Chat account shares.
func makerKey(m *member) string {
	if isChatAccount(m) {
		return relaySealer
	}
	return m.Key()
}

// remakeIn re-makes on m the foreign compactions among items, at the depth given.
func (x *exchange) remakeIn(m *member, tg *target, items [][]byte, depth int) (verdict, string) {
	for _, it := range items {
		v := compactionValue(it)
		if v == nil {
			continue
		}
		if foreign, _ := x.s.seals.foreignTo(v, m.Key()); !foreign || isRelaySealed(v) {
			continue // the relay's own compactions are read, not re-made
		}
		if depth == 0 {
			x.sealed.unknownFor = m.Key() // a conversation another account compacted (sealed.go)
		}
		d := x.s.seals.digest(v)
		if _, ask := x.s.compactions.remadeFor(d, makerKey(m), x.s.now()); !ask {
			continue
		}
		if vd, why := x.remakeJoined(m, tg, d, depth); vd != served {
			return vd, why
		}
	}
	return served, ""
}

// remakeJoined re-makes the kept compaction d on m once for all the requests that need it at
// the same time (issue 49: sixteen turns of one conversation right after its sealer rested
// asked m sixteen times, sixteen model calls on its quota): the first request makes it, the
// others wait for it and read what it made from the store.
func (x *exchange) remakeJoined(m *member, tg *target, d uint64, depth int) (verdict, string) {
	type made struct {
		v    verdict
		why  string
		gone bool // the maker's client went away: its verdict says nothing of the account
	}
	key := strconv.FormatUint(d, 16) + "/" + makerKey(m)
	for try := 0; ; try++ {
		mine := false
		res, _, _ := x.s.remaking.Do(key, func() (any, error) {
			mine = true
			if _, ask := x.s.compactions.remadeFor(d, makerKey(m), x.s.now()); !ask {
				return made{v: served}, nil // made by one that ended just before this began
			}
			v, why := x.remake(m, tg, d, depth)
			return made{v, why, x.r.Context().Err() != nil}, nil
		})
		r := res.(made)
		switch {
		case mine || r.v == served:
			return r.v, r.why
		case (r.gone || r.v == busy) && try < 2 && x.r.Context().Err() == nil:
			continue // the maker's own matter: make it again, or join the next maker
		}
		// The account failed another request's re-making; this one moves on as it would have.
		return nextAccount, r.why
	}
}

// remake asks m for its own compaction of the kept compaction d: the kept request, with the
// compactions it holds re-made first and what m cannot read of it left out, sent to m. The
// item m answers is kept for the conversation's next requests to m.
func (x *exchange) remake(m *member, tg *target, d uint64, depth int) (verdict, string) {
	body, _, ok := x.s.compactions.request(d)
	if !ok {
		return served, ""
	}
	// The kept request, decoded, and the body built from it count against the memory budget
	// while the re-making runs.
	held, e := x.holdUpTo(2 * int64(len(body)))
	if e != nil {
		return busy, e.Message
	}
	defer x.letGo(held)
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
	tr, err := x.remakeTry(m, tg, obj, items)
	if err != nil {
		x.s.compactions.setRemade(d, makerKey(m), nil, x.s.now().Add(cannotRetry))
		return served, ""
	}
	x.sealed.remaking = true
	defer func() { x.sealed.remaking = false }()
	n0 := len(x.t.Attempts)
	v, why, item := x.askCompaction(tr) // through the pool: a refused sign-in is renewed there
	for i := n0; i < len(x.t.Attempts); i++ {
		x.t.Attempts[i].Kind = AttemptCompaction
	}
	switch v {
	case served:
		retry := time.Time{}
		if item == nil {
			retry = x.s.now().Add(cannotRetry)
			x.s.log.Info("the account could not re-make the conversation's compaction: it is left out", "id", x.t.ID,
				"account", m.Name, "reason", why)
		} else if !isChatAccount(m) {
			x.s.seals.learn(m.Key(), x.req.session, compactionValue(item))
		}
		x.s.compactions.setRemade(d, makerKey(m), item, retry)
		return served, ""
	case resealed:
		x.s.compactions.setRemade(d, makerKey(m), nil, x.s.now().Add(cannotRetry))
		return served, ""
	}
	return v, "re-making the conversation's compaction: " + why
}

// remakeTry is the try that asks m for its compaction of a kept request (obj, its items): the
// request with what m cannot read left out (and the compactions it holds put as m's own), or,
// for a Chat account, the summary request the relay makes its compaction from.
func (x *exchange) remakeTry(m *member, tg *target, obj *payload.Object, items [][]byte) (*accountTry, error) {
	if isChatAccount(m) {
		b, err := x.chatCompactionBody(obj, items, tg)
		if err != nil {
			return nil, err
		}
		return &accountTry{m: m, tg: tg, wire: compactOverChat, body: builtBody{b: b}}, nil
	}
	ov := x.modelOverride(tg)
	if edits := inputEdits(items, false, x.ownOnly(m), x.remadeFor(m)); len(edits) > 0 {
		ov = append(ov, payload.Override{Key: "input", Value: (&sealedParts{}).input(items, edits)})
	}
	return &accountTry{m: m, tg: tg, wire: responsesWire,
		body: builtBody{b: payload.Build(nil, obj, append(ov, backendRules(m)...))}}, nil
}

// AttemptCompaction is the Kind of an attempt that re-made a conversation's compaction on the
// account before the request was sent to it.
const AttemptCompaction = "compaction"

// askCompaction sends a compaction request to its account and returns the compaction item
// it answered (nil with served: the account answered, but with no compaction, or refused the
// request as the client's mistake).
func (x *exchange) askCompaction(tr *accountTry) (verdict, string, []byte) {
	v, why, a := x.call(tr)
	if v != served {
		return v, why, nil
	}
	defer a.close()
	if a.resp.StatusCode/100 != 2 {
		return served, why, nil
	}
	if tr.wire == compactOverChat {
		summary, err := chatSummary(a.plain)
		if err != nil {
			return served, err.Error(), nil
		}
		return served, "", x.relayCompactionItem(summary)
	}
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
