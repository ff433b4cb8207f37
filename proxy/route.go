package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/codexrelay/codexrelay/proxy/internal/stat"
	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Route: which model a request goes to (the catalog, refreshed as stale-while-revalidate
// says, and the aliases) and which accounts may take it, in the order to try them.

// route resolves the request's model, then tries the accounts that serve it.
func (x *exchange) route() {
	if e := x.s.resolveModel(x.r.Context(), x); e != nil {
		x.reject(e, OutcomeRejected)
		return
	}
	x.prepared()
	x.dispatch()
}

func (s *Server) resolveModel(ctx context.Context, x *exchange) *apiError {
	st, counts, err := s.catalog.resolve(ctx)
	x.t.ModelCatalogRefresh = counts
	if err != nil {
		return &apiError{Status: 499, Type: "invalid_request_error", Code: "client_closed", Message: "the client went away"}
	}
	x.catalog = st
	targets := s.targets(x.req.model, st)
	if len(targets) == 0 {
		msg := fmt.Sprintf("The model %q does not exist on any account of this relay", x.req.model)
		if sug := st.suggestions(x.req.model); len(sug) > 0 {
			msg += "; did you mean " + strings.Join(sug, ", ") + "?"
		}
		return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found", Param: "model", Message: msg}
	}
	x.targets = targets
	x.t.ResolvedModel = targets[0]
	return nil
}

// targets are the catalog's models a request for model tries, in order.
func (s *Server) targets(model string, st *catalogState) []string {
	var targets []string
	for _, t := range s.expand(model, st) {
		if st.knows(t) {
			targets = append(targets, t)
		}
	}
	return targets
}

// expand resolves model through the aliases into real target models, in order, without
// repeats. A name the catalog knows as a real model is never treated as an alias.
func (s *Server) expand(model string, st *catalogState) []string {
	aliases := s.aliasMap()
	var out []string
	var walk func(name string)
	walk = func(name string) {
		targets, isAlias := aliases[name]
		if isAlias && (st == nil || st.models[name] == nil) {
			for _, t := range targets {
				walk(t)
			}
			return
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	walk(model)
	return out
}

// prepared marks the end of the preparation phase.
func (x *exchange) prepared() {
	x.t.LatencyBreakdown.PreparationMs = stat.Ms(x.s.now().Sub(x.start))
}

// resolveModel runs the catalog's refresh rules for the request and turns the requested model
// (or alias) into the target models to try. A model the known catalog lacks is a 404 naming
// close matches; with no catalog at all, the request passes through as asked.
// Resolution is what Resolve found for a model name.
type Resolution struct {
	// Models are the catalog's models a request for the name would try, in order (an alias may
	// name several); none when the catalog knows none of them.
	Models []string
	// Refresh says how the catalog was brought up to date for it (README: "The serialization cache and the catalog refresh").
	Refresh RefreshCounts
}

// Resolve resolves a model name as a request would: through the catalog, refreshed as its
// stale-while-revalidate rules say, and the aliases.
func (s *Server) Resolve(ctx context.Context, model string) (Resolution, error) {
	st, counts, err := s.catalog.resolve(ctx)
	if err != nil {
		return Resolution{Refresh: counts}, err
	}
	return Resolution{Models: s.targets(model, st), Refresh: counts}, nil
}

// dispatch tries the target models in order and, for each, the accounts that serve it, until
// one answers or all failed.
func (x *exchange) dispatch() {
	x.cache = payload.NewCache()
	x.cache.Alloc = x.allocBody
	var failures []string
	tried := 0
	for {
		if x.dispatchOnce(&tried, &failures) {
			return
		}
		if !x.holdForPool() {
			break
		}
	}
	if x.r.Context().Err() != nil {
		x.t.Status, x.t.Outcome = 499, OutcomeCanceled // left while held
		return
	}
	x.noAccountServed(tried, failures)
}

// dispatchOnce tries each target's usable accounts once; true when one answered (or the client
// left).
func (x *exchange) dispatchOnce(tried *int, failures *[]string) bool {
	s := x.s
	for _, target := range x.targets {
		x.target = target
		// The tool filtering of a target is worked out once, not per account tried.
		x.tools, x.toolsDropped = x.toolsFor(target)
		x.t.ResolvedModel = target
		serves := func(m *member) bool { return x.catalog.serves(m.Name, target) }
		cands := x.preferSealer(s.pool.candidates(target, x.req.session, s.now(), serves), target, serves)
		for _, m := range cands {
			if *tried > 0 && !s.pool.current(m) {
				continue // removed or disabled while this request was trying other accounts
			}
			if *tried > 0 {
				s.c.rotations.Add(1)
				reason := "held for the pool"
				if len(*failures) > 0 {
					reason = (*failures)[len(*failures)-1]
				}
				s.log.Info("rotating to the next account", "id", x.t.ID, "to", m.Name, "model", target, "reason", reason)
			}
			*tried++
			done, reason := x.tryAccount(m)
			if done {
				return true
			}
			if x.r.Context().Err() != nil {
				x.t.Status, x.t.Outcome = 499, OutcomeCanceled
				return true
			}
			*failures = append(*failures, m.Name+": "+reason)
		}
	}
	return false
}

// toolsFor removes the tool types the target's catalog entry says it does not support. It
// returns the override for "tools" (nil when nothing changes) and the dropped types.
func (x *exchange) toolsFor(target string) (*payload.Override, []string) {
	if x.catalog == nil {
		return nil, nil
	}
	e := x.catalog.models[target]
	raw, ok := x.req.obj.Get("tools")
	if e == nil || len(e.UnsupportedTools) == 0 || !ok || payload.KindOf(raw) != payload.KindArray {
		return nil, nil
	}
	var tools []json.RawMessage
	if json.Unmarshal(raw, &tools) != nil {
		return nil, nil
	}
	kept := make([]json.RawMessage, 0, len(tools))
	var dropped []string
	for _, t := range tools {
		var v struct {
			Type string `json:"type"`
		}
		json.Unmarshal(t, &v)
		if slices.Contains(e.UnsupportedTools, v.Type) {
			dropped = append(dropped, v.Type)
			continue
		}
		kept = append(kept, t)
	}
	if len(dropped) == 0 {
		return nil, nil
	}
	b, _ := json.Marshal(kept)
	return &payload.Override{Key: "tools", Value: b}, dropped
}

// noAccountServed answers a request that no account could take: why, in the OpenAI error
// shape. (Apart from dispatch, whose frame the stream's stack carries.)
//
//go:noinline
func (x *exchange) noAccountServed(tried int, failures []string) {
	s := x.s
	x.target, x.t.ResolvedModel = x.targets[0], x.targets[0]
	if x.trans != nil && x.trans.err != nil && tried == x.untranslatable {
		// Every account needed a translation, and nothing usable was left of the request.
		x.reject(errInvalid("untranslatable_request", "", "this request cannot be sent to the accounts that serve "+x.target+
			" (they speak the other API): "+x.trans.err.Error()), OutcomeRejected)
		return
	}
	if x.storeDown > 0 && x.storeDown == tried {
		// Nothing an upstream or a retry can fix: say what to unlock or install.
		x.reject(&apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "keychain_unavailable",
			Message: "Codex Relay cannot read the accounts' secrets: " + x.storeErr}, OutcomeError)
		return
	}
	e := s.pool.unavailable(x.t.ResolvedModel, s.now())
	if tried == 0 {
		x.reject(e, OutcomeRejected)
		return
	}
	// Every candidate failed before any byte reached the client. When no account is usable any
	// more (all cooling down or signed out) the pool's answer says so and when to come back;
	// otherwise the failures were the upstreams' (a 502 the Codex CLI retries).
	if !s.pool.anyUsable(x.target, s.now()) {
		e.Message = "every account failed: " + strings.Join(failures, "; ") + ". " + e.Message
		x.reject(e, OutcomeError)
		return
	}
	x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error",
		Message: "every upstream account failed: " + strings.Join(failures, "; ")}, OutcomeError)
}

// preferSealer puts first among the candidates the account that sealed the multi-agent
// content the request carries, when the first candidate would have to leave it out: leaving
// out a sub-agent's task or a call's arguments loses work, where leaving out reasoning only
// loses thought. When that account rests and is back within the hold bound, the request waits
// for it (hold.go) rather than go elsewhere without the content.
func (x *exchange) preferSealer(cands []*member, target string, serves func(*member) bool) []*member {
	if len(cands) == 0 || x.s.sealOff.Load() || !x.s.seals.foreignIn(x.req.session, cands[0].key()) {
		return cands // the cost of a conversation that never rotated: this look-up
	}
	key := x.multiAgentSealer()
	if key == "" || key == cands[0].key() {
		return cands
	}
	for i, m := range cands {
		if m.key() == key {
			copy(cands[1:i+1], cands[:i])
			cands[0] = m
			return cands
		}
	}
	m := x.s.pool.get(key)
	if m == nil || !serves(m) {
		return cands
	}
	if back := m.restsUntil(x.s.now()); x.holdCovers(back) && x.holdUntil(back) && m.usable(target, x.s.now()) {
		return append([]*member{m}, cands...)
	}
	return cands
}

// multiAgentSealer is the account that sealed the newest multi-agent content of the request's
// input (a call's sealed arguments, an agent message's sealed block), "" when it carries
// none the relay knows the sealer of. Worked out once per request.
func (x *exchange) multiAgentSealer() string {
	if x.sealer != nil {
		return *x.sealer
	}
	owner := ""
	items := x.inputItemsOf()
	for i := len(items) - 1; i >= 0 && owner == ""; i-- {
		it := items[i]
		if !bytes.Contains(it, sealedPrefix) || !bytes.Contains(it, functionCallType) && !bytes.Contains(it, agentMessageType) {
			continue
		}
		sealedIn(it, func(v []byte) {
			if o, ok := x.s.seals.owner(v); ok && owner == "" {
				owner = o
			}
		})
	}
	x.sealer = &owner
	return owner
}

var (
	agentMessageType = []byte(`"agent_message"`)
	functionCallType = []byte(`"function_call"`)
)
