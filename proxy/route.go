package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/proxy/internal/stat"
	"github.com/codexrelay/codexrelay/proxy/payload"
	"github.com/codexrelay/codexrelay/proxy/pool"
)

// Route: which model a request goes to (the catalog, refreshed as stale-while-revalidate
// says, and the aliases) and which accounts may take it, in the order to try them.

// relay runs an admitted request through the phases that follow: route it, then try the
// accounts its plan names.
func (x *exchange) relay() {
	p := x.planned()
	if p == nil {
		return
	}
	x.dispatch(p)
}

// planned routes the request and marks the end of its preparation; nil when it was answered
// (a model no account serves). Apart from relay, whose frame every request's stack carries
// while its answer streams.
//
//go:noinline
func (x *exchange) planned() *plan {
	p, e := x.route()
	if e != nil {
		x.reject(e, OutcomeRejected)
		return nil
	}
	x.prepared()
	return &p
}

// plan is what route found for a request: the catalog it resolved the model with (nil: none
// could be had) and the models to try, in order (an alias may name several). dispatch tries,
// for each target, the accounts that serve it (candidates).
type plan struct {
	catalog *catalogState
	targets []target
	// accounts, when set, are the only accounts that may take the request (a backend call's:
	// the ChatGPT accounts).
	accounts func(*member) bool
}

// target is one model of a plan: its name, its catalog entry (nil: none), and the tools filter
// the entry asks of a body, worked out once, when the target is first tried.
type target struct {
	model    string
	entry    *modelEntry
	filtered bool
	tools    *payload.Override // the filtered tools (nil: unchanged)
	dropped  []string          // the tool types the filter removed
}

// route runs the catalog's refresh rules for the request (stale-while-revalidate) and turns
// the requested model, or alias, into the plan's targets. A model the known catalog lacks is a
// 404 naming close matches; with no catalog at all, the request passes through as asked.
func (x *exchange) route() (plan, *apiError) {
	st, counts, err := x.s.catalog.resolve(x.r.Context())
	x.t.ModelCatalogRefresh = counts
	if err != nil {
		return plan{}, &apiError{Status: 499, Type: "invalid_request_error", Code: "client_closed", Message: "the client went away"}
	}
	p := x.s.plan(x.req.model, st)
	if len(p.targets) == 0 {
		msg := fmt.Sprintf("The model %q does not exist on any account of this relay", x.req.model)
		if sug := st.suggestions(x.req.model); len(sug) > 0 {
			msg += "; did you mean " + strings.Join(sug, ", ") + "?"
		}
		return plan{}, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found", Param: "model", Message: msg}
	}
	x.t.ResolvedModel = p.targets[0].model
	return p, nil
}

// serves reports whether m may take target tg: an account of the plan's, which the catalog lets
// take the model.
func (p *plan) serves(m *member, tg *target) bool {
	return (p.accounts == nil || p.accounts(m)) && p.catalog.serves(m.Name, tg.model)
}

// servesAny reports whether the catalog lets m take one of the plan's targets.
func (p *plan) servesAny(m *member) bool {
	for i := range p.targets {
		if p.serves(m, &p.targets[i]) {
			return true
		}
	}
	return false
}

// anyUsable reports whether an account that serves one of the plan's targets can take it now.
func (p *plan) anyUsable(pl *pool.Pool, now time.Time) bool {
	for i := range p.targets {
		if p.usable(pl, &p.targets[i], now) {
			return true
		}
	}
	return false
}

// usable reports whether an account that serves target tg can take it now.
func (p *plan) usable(pl *pool.Pool, tg *target, now time.Time) bool {
	return pl.AnyUsable(tg.model, now, func(m *member) bool { return p.serves(m, tg) })
}

// notLite reports whether the target's catalog entry says the model is not served in the
// Responses Lite form (its use_responses_lite is false); an entry that says nothing, or none,
// leaves it to the client.
func (tg *target) notLite() bool {
	e := tg.entry
	return e != nil && e.Lite != nil && !*e.Lite
}

// plan is the plan of a request for model with catalog st: the catalog's models it tries, in
// order.
func (s *Server) plan(model string, st *catalogState) plan {
	p := plan{catalog: st}
	for _, t := range s.expand(model, st) {
		if st.knows(t) {
			p.targets = append(p.targets, target{model: t, entry: st.entry(t)})
		}
	}
	return p
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
	x.t.LatencyBreakdown.PreparationMs = stat.Ms(x.s.now().Sub(x.times.start))
}

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
	var models []string
	for _, tg := range s.plan(model, st).targets {
		models = append(models, tg.model)
	}
	return Resolution{Models: models, Refresh: counts}, nil
}

// dispatch tries the plan's targets in order and, for each, the accounts that serve it, until
// one answers or all failed; a pool that rests may hold the request and try again (hold.go).
func (x *exchange) dispatch(p *plan) {
	x.out.startCache(x.hold)
	var tl tally
	for {
		if x.dispatchOnce(p, &tl) {
			return
		}
		if !x.holdForPool(p) {
			break
		}
	}
	if x.r.Context().Err() != nil {
		x.t.Status, x.t.Outcome = 499, OutcomeCanceled // left while held
		return
	}
	x.noAccountServed(p, &tl)
}

// tally is what the accounts a request tried said: how many were tried, why each failed, and
// how many failed for what no other account mends (a request no translation could carry, a
// keychain that cannot be read).
type tally struct {
	tried          int
	failures       []string
	untranslatable int
	untranslated   error // why the last such account could not take it
	storeDown      int
	storeErr       string // why the keychain could not be read, with advice
}

// add counts m's failure f.
func (tl *tally) add(m *member, f failure) {
	tl.failures = append(tl.failures, m.Name+": "+f.reason)
	if f.untranslatable != nil {
		tl.untranslatable++
		tl.untranslated = f.untranslatable
	}
	if f.storeErr != "" {
		tl.storeDown++
		tl.storeErr = f.storeErr
	}
}

// dispatchOnce tries each target's usable accounts once; true when one answered (or the client
// left).
func (x *exchange) dispatchOnce(p *plan, tl *tally) bool {
	s := x.s
	for i := range p.targets {
		tg := &p.targets[i]
		// The tool filtering of a target is worked out once, not per account tried.
		x.filterTools(tg)
		x.t.ResolvedModel = tg.model
		for _, m := range x.candidates(p, tg) {
			if tl.tried > 0 && (!s.pool.Current(m) || !m.Usable(tg.model, s.now())) {
				// Removed, disabled or rested while this request was trying other accounts (a
				// workspace's limit rests all its accounts at once: pool.Rest).
				continue
			}
			if tl.tried > 0 {
				s.c.rotations.Add(1)
				reason := "held for the pool"
				if len(tl.failures) > 0 {
					reason = tl.failures[len(tl.failures)-1]
				}
				s.log.Info("rotating to the next account", "id", x.t.ID, "to", m.Name, "model", tg.model, "reason", reason)
			}
			tl.tried++
			done, f := x.tryAccount(m, tg)
			if done {
				return true
			}
			if x.r.Context().Err() != nil {
				x.t.Status, x.t.Outcome = 499, OutcomeCanceled
				return true
			}
			tl.add(m, f)
		}
	}
	return false
}

// candidates are the accounts that may take target tg now, in the order to try them.
func (x *exchange) candidates(p *plan, tg *target) []*member {
	serves := func(m *member) bool { return p.serves(m, tg) }
	return x.preferSealer(x.s.pool.Candidates(tg.model, x.req.session, x.s.now(), serves), tg.model, serves)
}

// filterTools removes from the request's tools the types tg's catalog entry says it does not
// support, once: tg.tools is the override for "tools" (nil when nothing changes) and
// tg.dropped the types removed.
func (x *exchange) filterTools(tg *target) {
	if tg.filtered {
		return
	}
	tg.filtered = true
	e := tg.entry
	raw, ok := x.req.obj.Get("tools")
	if e == nil || len(e.UnsupportedTools) == 0 || !ok || payload.KindOf(raw) != payload.KindArray {
		return
	}
	var tools []json.RawMessage
	if json.Unmarshal(raw, &tools) != nil {
		return
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
		return
	}
	b, _ := json.Marshal(kept)
	tg.tools, tg.dropped = &payload.Override{Key: "tools", Value: b}, dropped
}

// noAccountServed answers a request that no account could take: why, in the OpenAI error
// shape. (Apart from dispatch, whose frame the stream's stack carries.)
//
//go:noinline
func (x *exchange) noAccountServed(p *plan, tl *tally) {
	s := x.s
	model := p.targets[0].model
	x.t.ResolvedModel = model
	if x.req.route == routeDocument {
		x.documentFailed(tl)
		return
	}
	if tl.tried > 0 && tl.tried == tl.untranslatable {
		// No account could take the request in its protocol: every one needed a translation
		// that left nothing usable, or could not do what it asks (a compaction), or the answer
		// is the API's own (previous_response_not_found).
		if ae, ok := tl.untranslated.(*apiError); ok {
			x.reject(ae, OutcomeRejected)
			return
		}
		x.reject(errInvalid("untranslatable_request", "", "this request cannot be sent to the accounts that serve "+model+
			": "+tl.untranslated.Error()), OutcomeRejected)
		return
	}
	if tl.storeDown > 0 && tl.storeDown == tl.tried {
		// Nothing an upstream or a retry can fix: say what to unlock or install.
		x.reject(&apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "keychain_unavailable",
			Message: "Codex Relay cannot read the accounts' secrets: " + tl.storeErr}, OutcomeError)
		return
	}
	e := s.unavailable(s.pool.Unavailable(model, s.now(), nil), "")
	if tl.tried == 0 {
		x.reject(e, OutcomeRejected)
		return
	}
	// Every candidate failed before any byte reached the client. When no account is usable any
	// more (all cooling down or signed out) the pool's answer says so and when to come back;
	// otherwise the failures were the upstreams' (a 502 the Codex CLI retries).
	if !s.pool.AnyUsable(model, s.now(), nil) {
		e.Message = "every account failed: " + strings.Join(tl.failures, "; ") + ". " + e.Message
		x.reject(e, OutcomeError)
		return
	}
	x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error",
		Message: "every upstream account failed: " + strings.Join(tl.failures, "; ")}, OutcomeError)
}

// preferSealer puts first among the candidates the account that sealed the multi-agent
// content or the compaction the request carries, when the first candidate would have to leave
// it out or re-make it: leaving out a sub-agent's task or a call's arguments loses work, a
// compaction the conversation's memory, where leaving out reasoning only loses thought. When
// that account rests and is back within the hold bound, the request waits for it (hold.go)
// rather than go elsewhere without the content.
func (x *exchange) preferSealer(cands []*member, target string, serves func(*member) bool) []*member {
	if len(cands) == 0 || x.s.sealOff.Load() || !x.s.seals.foreignIn(x.req.session, cands[0].Key()) {
		return cands // the cost of a conversation that never rotated: this look-up
	}
	key := x.preciousSealer()
	if key == "" || key == cands[0].Key() {
		return cands
	}
	for i, m := range cands {
		if m.Key() == key {
			copy(cands[1:i+1], cands[:i])
			cands[0] = m
			return cands
		}
	}
	m := x.s.pool.Get(key)
	if m == nil || !serves(m) {
		return cands
	}
	if back := m.RestsUntil(x.s.now()); x.holdCovers(back) && x.holdUntil(back) && m.Usable(target, x.s.now()) {
		return append([]*member{m}, cands...)
	}
	return cands
}

// preciousSealer is the account that sealed the newest multi-agent content or compaction of
// the request's input (a call's sealed arguments, an agent message's sealed block, a
// compaction item), "" when it carries none the relay knows the sealer of. Worked out once per
// request.
func (x *exchange) preciousSealer() string {
	if x.sealed.sealer != nil {
		return *x.sealed.sealer
	}
	owner := ""
	items := x.body.items()
	for i := len(items) - 1; i >= 0 && owner == ""; i-- {
		it := items[i]
		multiAgent := bytes.Contains(it, sealedPrefix) && (bytes.Contains(it, functionCallType) || bytes.Contains(it, agentMessageType))
		if !multiAgent && !bytes.Contains(it, compactionType) {
			continue
		}
		sealedIn(it, func(v []byte) {
			if o, ok := x.s.seals.owner(v); ok && owner == "" {
				owner = o
			}
		})
	}
	x.sealed.sealer = &owner
	return owner
}

var (
	agentMessageType = []byte(`"agent_message"`)
	functionCallType = []byte(`"function_call"`)
)
