package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// SetAliases replaces the model aliases: each alias names one or more target models (or other
// aliases), tried in order. Cycles are refused. An alias that shadows a real model, or whose
// targets are all unknown once the catalog is known, is reported in the stats and ignored.
func (s *Server) SetAliases(aliases map[string][]string) error {
	if err := CheckAliases(aliases); err != nil {
		return err
	}
	cp := make(map[string][]string, len(aliases))
	for k, v := range aliases {
		cp[k] = slices.Clone(v)
	}
	s.aliases.Store(&cp)
	return nil
}

// CheckAliases reports what SetAliases would refuse: an alias without a name or a target,
// and cycles.
func CheckAliases(aliases map[string][]string) error {
	for k, v := range aliases {
		if k == "" || len(v) == 0 {
			return fmt.Errorf("alias %q needs at least one target model", k)
		}
	}
	return checkAliasCycles(aliases)
}

func checkAliasCycles(aliases map[string][]string) error {
	const (
		visiting = 1
		done     = 2
	)
	mark := map[string]int{}
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		switch mark[name] {
		case visiting:
			return fmt.Errorf("model aliases form a cycle: %s", strings.Join(append(path, name), " -> "))
		case done:
			return nil
		}
		targets, ok := aliases[name]
		if !ok {
			return nil
		}
		mark[name] = visiting
		for _, t := range targets {
			if err := visit(t, append(path, name)); err != nil {
				return err
			}
		}
		mark[name] = done
		return nil
	}
	names := make([]string, 0, len(aliases))
	for k := range aliases {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if err := visit(k, nil); err != nil {
			return err
		}
	}
	return nil
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

func (s *Server) aliasMap() map[string][]string {
	if p := s.aliases.Load(); p != nil {
		return *p
	}
	return nil
}

// aliasErrors lists the aliases the known catalog makes invalid.
func (s *Server) aliasErrors(st *catalogState) []string {
	if st == nil || st.listed == 0 {
		return nil
	}
	var errs []string
	for name := range s.aliasMap() {
		if st.models[name] != nil {
			errs = append(errs, fmt.Sprintf("alias %q shadows a real model and is ignored", name))
			continue
		}
		for _, t := range s.expand(name, st) {
			if st.models[t] == nil && len(st.unlisted) == 0 {
				errs = append(errs, fmt.Sprintf("alias %q: target %q is not in the catalog", name, t))
			}
		}
	}
	slices.Sort(errs)
	return errs
}

// resolveModel runs the catalog's refresh rules for the request and turns the requested model
// (or alias) into the target models to try. A model the known catalog lacks is a 404 naming
// close matches; with no catalog at all, the request passes through as asked.
// Resolution is what Resolve found for a model name.
type Resolution struct {
	// Models are the catalog's models a request for the name would try, in order (an alias may
	// name several); none when the catalog knows none of them.
	Models []string
	// Refresh says how the catalog was brought up to date for it (seed 001).
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

// knows reports whether a request for model may be sent: the catalog lists it, some account
// has no list yet, or there is no catalog at all.
func (st *catalogState) knows(model string) bool {
	return st == nil || st.listed == 0 || st.models[model] != nil || len(st.unlisted) > 0
}

// serves reports whether account may take model according to the catalog.
func (st *catalogState) serves(account, model string) bool {
	if st == nil || st.listed == 0 || st.unlisted[account] {
		return true
	}
	e := st.models[model]
	return e != nil && slices.Contains(e.Accounts, account)
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

// handleModels serves GET /v1/models: the OpenAI list and the Codex "models" array in one
// body. It waits for a refresh when the catalog is not fresh (it never serves stale).
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	st, err := s.catalog.current(r.Context())
	if err != nil {
		return
	}
	data, models := s.modelList(st)
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "models": models})
}

// handleModel serves GET /v1/models/{id}.
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, err := s.catalog.current(r.Context())
	if err != nil {
		return
	}
	data, _ := s.modelList(st)
	for _, d := range data {
		if d.ID == id {
			writeJSON(w, http.StatusOK, d)
			return
		}
	}
	msg := fmt.Sprintf("The model %q does not exist on any account of this relay", truncate(id, 200))
	if sug := st.suggestions(id); len(sug) > 0 {
		msg += "; did you mean " + strings.Join(sug, ", ") + "?"
	}
	writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found", Param: "model", Message: msg})
}

// current returns a fresh catalog, waiting for a refresh if needed (used by /v1/models).
func (c *catalog) current(ctx context.Context) (*catalogState, error) {
	st := c.state.Load()
	if st != nil && !st.expired && c.s.now().Sub(st.at) < c.ttlDuration() {
		return st, nil
	}
	st, _, err := c.wait(ctx)
	if errors.Is(err, context.Canceled) {
		return nil, err
	}
	return st, err
}

// OpenAIModel is an entry of the OpenAI model list.
type OpenAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// modelList builds both lists: real models in catalog order, then aliases.
func (s *Server) modelList(st *catalogState) ([]OpenAIModel, []json.RawMessage) {
	data := []OpenAIModel{}
	models := []json.RawMessage{}
	if st == nil {
		return data, models
	}
	instructions := defaultBaseInstructions
	for _, id := range st.order {
		if e := st.models[id]; e.Codex != nil {
			var v struct {
				BaseInstructions string `json:"base_instructions"`
			}
			if json.Unmarshal(e.Codex, &v) == nil && v.BaseInstructions != "" {
				instructions = v.BaseInstructions
				break
			}
		}
	}
	for i, id := range st.order {
		e := st.models[id]
		data = append(data, OpenAIModel{ID: id, Object: "model", OwnedBy: strings.Join(e.Accounts, ",")})
		if e.Codex != nil {
			models = append(models, e.Codex)
		} else {
			models = append(models, codexEntry(id, "Served through Codex Relay by "+strings.Join(e.Accounts, ", "), instructions, 100+i))
		}
	}
	invalid := strings.Join(s.aliasErrors(st), "\n")
	names := make([]string, 0)
	for name := range s.aliasMap() {
		names = append(names, name)
	}
	slices.Sort(names)
	for i, name := range names {
		if st.models[name] != nil || strings.Contains(invalid, fmt.Sprintf("alias %q", name)) {
			continue
		}
		targets := s.expand(name, st)
		data = append(data, OpenAIModel{ID: name, Object: "model", OwnedBy: "alias"})
		entry := codexEntry(name, "Alias of "+strings.Join(targets, ", "), instructions, 1000+i)
		if t := st.models[targets[0]]; t != nil && t.Codex != nil {
			entry = renamedEntry(t.Codex, name, "Alias of "+strings.Join(targets, ", "))
		}
		models = append(models, entry)
	}
	return data, models
}

// codexEntry builds a model entry with every field the Codex CLI requires (one entry it cannot
// decode would make it drop the whole list).
func codexEntry(slug, description, instructions string, priority int) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"slug":                         slug,
		"display_name":                 slug,
		"description":                  description,
		"supported_reasoning_levels":   []any{},
		"shell_type":                   "default",
		"visibility":                   "list",
		"supported_in_api":             true,
		"priority":                     priority,
		"base_instructions":            instructions,
		"support_verbosity":            false,
		"truncation_policy":            map[string]any{"mode": "bytes", "limit": 10000},
		"experimental_supported_tools": []any{},
	})
	return b
}

// renamedEntry copies a Codex entry under another slug (for an alias of it).
func renamedEntry(raw json.RawMessage, slug, description string) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	m["slug"], m["display_name"], m["description"] = slug, slug, description
	b, _ := json.Marshal(m)
	return b
}

// defaultBaseInstructions is the system prompt given to Codex for models no ChatGPT account
// describes (Codex sends an entry's base_instructions as the model's instructions).
const defaultBaseInstructions = `You are Codex, a coding agent running in the user's terminal. You help with software engineering tasks in the user's workspace: you read files, run commands and edit code to complete the task.

Work until the task is fully resolved before ending your turn. Keep changes focused and consistent with the existing style of the codebase, prefer the smallest correct change, and run the relevant tests when you can. Use the tools you are given to inspect the workspace rather than guessing; when you edit files, use the patch tool. State your assumptions when the request is ambiguous, and finish with a short summary of what you changed and how you verified it.`
