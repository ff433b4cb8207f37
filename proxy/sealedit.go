package proxy

import (
	"bytes"
	"slices"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Input edits. An account receives a request's input items with edits, each item left out or
// replaced (itemEdit): for a Responses account, the sealed parts foreign to it left out, with
// the outputs of the calls whose arguments are, and a compaction another account sealed put as
// the account's own (inputEdits; which values are foreign to it is sealed.go's inputFor), and
// the additional_tools items left out of a Lite request's classic form; for a Chat account,
// which carries no compaction, every compaction put as text or left out (compactionEdits). The
// edits are counted in the trace (countOmitted) and applied in one place (withEdits).

// itemEdit is what becomes of input item i: left out (item nil) or replaced by item; kind
// names what was left out (the item's type, or "TYPE content" for blocks left out of it),
// sealed says it was left out for its sealed parts and blocks counts the blocks; remade says
// that a compaction was replaced by the serving account's own (item).
type itemEdit struct {
	i      int
	item   []byte
	kind   string
	sealed bool
	remade bool
	blocks int
}

func (a itemEdit) same(b itemEdit) bool { return a.i == b.i && bytes.Equal(a.item, b.item) }

// inputEdits are the edits of the input items all, in their order: the additional_tools items
// when classic, and the items whose sealed parts foreign says are foreign (nil: none), with the
// outputs of the calls left out; a foreign compaction item for which remade gives the account's
// own is replaced by it.
func inputEdits(all [][]byte, classic bool, foreign func([]byte) bool, remade func([]byte) []byte) []itemEdit {
	var edits []itemEdit
	var calls []string
	for i, it := range all {
		if classic && isAdditionalTools(it) {
			edits = append(edits, itemEdit{i: i})
			continue
		}
		if foreign == nil || !mayBeSealed(it) {
			continue
		}
		e, call := editSealed(it, foreign, remade)
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
		edits = withCallOutputs(all, edits, calls)
	}
	return edits
}

// withCallOutputs is edits with the outputs, among the items all, of the calls left out: they go
// with their calls (the backend refuses an output without its call). Sorted by item again.
func withCallOutputs(all [][]byte, edits []itemEdit, calls []string) []itemEdit {
	for i, it := range all {
		if kind, call := callOutput(it); call != "" && slices.Contains(calls, call) {
			edits = append(edits, itemEdit{i: i, kind: kind, sealed: true})
		}
	}
	slices.SortFunc(edits, func(a, b itemEdit) int { return a.i - b.i })
	return edits
}

// editSealed decides what becomes of an input item whose sealed parts foreign says are
// foreign: an item whose own encrypted_content is foreign is left out; a function call whose
// sealed arguments are is left out, and its call_id comes back (its outputs follow it); else
// the content blocks whose encrypted_content is foreign are left out of the item, at any
// depth (an item with nothing left is left out). A zero kind: nothing changes.
func editSealed(item []byte, foreign func([]byte) bool, remade func([]byte) []byte) (e itemEdit, call string) {
	o, err := payload.Parse(item)
	if err != nil {
		return itemEdit{}, ""
	}
	typ, _ := stringMember(o, "type")
	if typ == "" {
		typ = "item"
	}
	if v, ok := o.Get("encrypted_content"); ok && payload.KindOf(v) == payload.KindString && len(v) > 2 && foreign(v) {
		if typ == "compaction" && remade != nil {
			if own := remade(v); own != nil {
				return itemEdit{item: own, kind: typ, remade: true}, ""
			}
		}
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

// compactionEdits are the edits of a Chat account's input items, in their order: each
// compaction item, which such an account cannot carry, put as text: one the relay sealed is its
// summary; one an account sealed is the relay's own summary of the request behind it, when one
// was made (remakeCompactions; remade); any other is left out (sealed, said in the trace as
// sealed content left out is).
func (x *exchange) compactionEdits(items [][]byte) []itemEdit {
	var edits []itemEdit
	for i, it := range items {
		v := compactionValue(it)
		if v == nil {
			continue
		}
		e := itemEdit{i: i, kind: "compaction", sealed: true}
		if sum, ok := x.s.openSummary(v); ok {
			e = itemEdit{i: i, item: summaryItem(sum), kind: "compaction"}
		} else if made, _ := x.s.compactions.remadeFor(x.s.seals.digest(v), relaySealer, x.s.now()); made != nil {
			if sum, ok := x.s.openSummary(compactionValue(made)); ok {
				e = itemEdit{i: i, item: summaryItem(sum), kind: "compaction", remade: true}
			}
		}
		edits = append(edits, e)
	}
	return edits
}

// expandCompactions is items for a Chat account, with its compaction items put as text
// (compactionEdits), counted in the trace; ok is false when there is none.
func (x *exchange) expandCompactions(items [][]byte) (out [][]byte, ok bool) {
	edits := x.compactionEdits(items)
	if len(edits) == 0 {
		return nil, false
	}
	x.countOmitted(edits)
	return withEdits(items, edits), true
}

// withCompactionsExpanded is a Responses body for a Chat account with its compaction items put
// as text (expandCompactions); the body as it is when there is none.
func (x *exchange) withCompactionsExpanded(src []byte) []byte {
	o, err := payload.Parse(src)
	if err != nil {
		return src
	}
	raw, _ := o.Get("input")
	items, err := inputItems(raw)
	if err != nil {
		return src
	}
	exp, ok := x.expandCompactions(items)
	if !ok {
		return src
	}
	return payload.Build(nil, o, []payload.Override{{Key: "input", Value: joinItems(exp)}})
}

// countOmitted adds to the trace the sealed parts edits leave out, naming their kinds, and the
// compactions they replace with the serving account's own (for a Chat account, the relay's
// summary of the request behind one).
func (x *exchange) countOmitted(edits []itemEdit) {
	for _, e := range edits {
		if e.remade {
			x.t.CompactionRemade++
			continue
		}
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
}

// input is the input made of the items all with edits: the one built before for the same
// items and edits (an earlier attempt's), else a new one, remembered.
func (p *sealedParts) input(all [][]byte, edits []itemEdit) []byte {
	for _, v := range p.stripped {
		if v.from == &all[0] && v.n == len(all) && slices.EqualFunc(v.edits, edits, itemEdit.same) {
			return v.input
		}
	}
	v := strippedInput{from: &all[0], n: len(all), edits: edits, input: joinItems(withEdits(all, edits))}
	p.stripped = append(p.stripped, v)
	return v.input
}

// withEdits is the items all with edits (sorted by item): an item without one as it is, one
// left out or replaced.
func withEdits(all [][]byte, edits []itemEdit) [][]byte {
	kept := make([][]byte, 0, len(all))
	j := 0 // the next edit: both are walked once, in order
	for i, it := range all {
		for j < len(edits) && edits[j].i < i {
			j++
		}
		switch {
		case j == len(edits) || edits[j].i != i:
			kept = append(kept, it)
		case edits[j].item != nil:
			kept = append(kept, edits[j].item)
		}
	}
	return kept
}

// strippedInput is an input built with edits of a list of n items whose first is from.
type strippedInput struct {
	from  *[]byte
	n     int
	edits []itemEdit
	input []byte
}
