package proxy

import (
	"bytes"

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
//
// This file is what one request does with sealed parts: it learns from the answers it relays
// (learnEvent), works out the input an account receives (inputFor) and takes a refusal
// (refused). The edits that leave parts out of the input are sealedit.go; what the relay
// remembers across requests is the seal table (sealtable.go); the scans that find sealed values
// in raw JSON bytes are sealscan.go.

// SetSealedTracking turns the tracking of sealed items on (the default) or off: off, the
// relay neither learns who sealed what nor leaves anything out (an account's refusal of sealed
// content is then relayed). `bench proxy` measures the tracking's cost with it.
func (s *Server) SetSealedTracking(on bool) { s.sealOff.Store(!on) }

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
	learn := func(v []byte) { x.s.seals.learn(m.Key(), x.req.session, v) }
	sealedContents(output, learn)
	if bytes.Contains(output, sealedArgsKey) {
		sealedTokens(output, learn)
	}
	if bytes.Contains(output, compactionType) && !x.sealed.remaking && x.req.route == routeResponses {
		x.keepCompactions(m, output)
	}
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
	strip := x.sealed.stripFor == m.Key()
	sealing := !x.s.sealOff.Load() && (strip || x.s.seals.foreignIn(x.req.session, m.Key()) || x.carriesRelaySeal())
	if !sealing && !classic {
		return payload.Override{}, false
	}
	all := items()
	if len(all) == 0 {
		return payload.Override{}, false
	}
	var foreign func(v []byte) bool // nil: no sealed part is left out
	var remade func(v []byte) []byte
	if sealing {
		foreign, remade = x.foreignFor(m), x.remadeFor(m)
	}
	edits := inputEdits(all, classic, foreign, remade)
	if len(edits) == 0 {
		return payload.Override{}, false
	}
	x.t.CompactionRemade = 0
	x.countOmitted(edits)
	return payload.Override{Key: "input", Value: x.sealed.input(all, edits)}, true
}

// foreignFor says which sealed values are foreign to m: sealed by another account, or refused
// by m; after m refused sealed content in this request, every value m is not known to have
// sealed.
func (x *exchange) foreignFor(m *member) func(v []byte) bool {
	strip := x.sealed.stripFor == m.Key() || x.sealed.unknownFor == m.Key()
	return func(v []byte) bool {
		if isRelaySealed(v) {
			return true // no account reads the relay's own compactions: they are put as text
		}
		f, known := x.s.seals.foreignTo(v, m.Key())
		return f || (!known && strip)
	}
}

// ownOnly says, for a re-making on m, which sealed values to leave out: every one m is not known
// to have sealed. A kept request read back after a restart holds values whose sealers the seal
// table never learned: sent to another account, they would make it refuse the re-making.
func (x *exchange) ownOnly(m *member) func(v []byte) bool {
	return func(v []byte) bool {
		f, known := x.s.seals.foreignTo(v, m.Key())
		return f || !known
	}
}

// remadeFor gives, for the sealed value of a compaction item foreign to m, m's own compaction
// of the same conversation (compaction.go), or nil when there is none.
func (x *exchange) remadeFor(m *member) func(v []byte) []byte {
	return func(v []byte) []byte {
		if sum, ok := x.s.openSummary(v); ok {
			return summaryItem(sum)
		}
		item, _ := x.s.compactions.remadeFor(x.s.seals.digest(v), m.Key(), x.s.now())
		return item
	}
}

// carriesRelaySeal reports whether the request's input holds a compaction the relay sealed
// (relaycompact.go), looked for once.
func (x *exchange) carriesRelaySeal() bool {
	if x.sealed.relaySeal == 0 {
		x.sealed.relaySeal = 1
		if !x.s.relaySeals.Load() {
			return false // no compaction the relay sealed can be about: no look at the body
		}
		// An HTTP body's bytes are at hand; a socket turn's whole conversation would have to be
		// replayed to look (socket turns to a Responses account keep such an item as it is).
		if cb, ok := x.body.(*clientBody); ok && bytes.Contains(cb.raw, []byte(relaySealPrefix)) {
			x.sealed.relaySeal = 2
		}
	}
	return x.sealed.relaySeal == 2
}

// sealedParts is what a request worked out of the sealed parts it carries: stripped the
// inputs built without foreign sealed parts (one per set of edits), stripFor the account that
// refused sealed content and is retried without every sealed part it did not seal, sealer
// the account that sealed its multi-agent content or compaction (route.go; nil: not worked out
// yet), and remaking that a compaction is being re-made (compaction.go): what the answer seals
// is not this request's.
type sealedParts struct {
	stripped []strippedInput
	stripFor string
	// relaySeal: 0 not looked for yet, 1 none, 2 the input holds a compaction the relay sealed.
	relaySeal int8
	// unknownFor is the account this request goes to whose input holds a compaction another
	// account sealed (compaction.go): the sealed parts nobody is known to have sealed are, in
	// such a conversation, most likely that account's too (the seal table forgets across a
	// restart), so they are left out for it rather than sent to be refused.
	unknownFor string
	sealer     *string
	remaking   bool
}

// refused is called when m refused sealed content: the sealed values m is not known to have
// sealed are remembered as refused by m (foreign to m, and only to m), and the request is to
// be retried on m without them. It reports false when there is nothing to leave out, or when
// this request already retried m so (the refusal is then the client's answer).
func (x *exchange) refused(m *member, items func() [][]byte) bool {
	if x.sealed.stripFor == m.Key() || x.s.sealOff.Load() {
		return false
	}
	found := false
	for _, it := range items() {
		if !mayBeSealed(it) {
			continue
		}
		sealedIn(it, func(v []byte) {
			if owner, known := x.s.seals.owner(v); known && owner == m.Key() {
				return
			}
			found = true
			x.s.seals.refuse(m.Key(), x.req.session, v)
		})
	}
	if !found {
		// m refuses what it sealed itself: its seals no longer verify (a backend key change).
		// What it sealed is foreign to it from now on: a compaction among it is re-made on m
		// from the request the relay kept (compaction.go), the rest left out.
		for _, it := range items() {
			if mayBeSealed(it) {
				sealedIn(it, func(v []byte) {
					if x.s.seals.disown(m.Key(), x.req.session, v) {
						found = true
					}
				})
			}
		}
	}
	if found {
		x.sealed.stripFor = m.Key()
		x.t.SealedRetry = true
	}
	return found
}
