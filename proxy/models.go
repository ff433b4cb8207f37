package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/codexrelay/codexrelay/proxy/pool"
)

// handleModels serves GET /v1/models: the OpenAI list and the Codex "models" array in one
// body. It waits for a refresh when the catalog is not fresh (it never serves stale).
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if v := r.URL.Query().Get("client_version"); v != "" {
		s.catalog.askedWith(v)
	}
	if s.noAccounts(w) {
		return
	}
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
	if s.noAccounts(w) {
		return
	}
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
	if c.fresh(st, c.s.now()) {
		return st, nil
	}
	st, _, err := c.wait(ctx)
	if err == nil && st != nil && st.version != c.clientVersion() {
		// The refresh joined began before a newer client's version came: one more.
		st, _, err = c.wait(ctx)
	}
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

// noAccounts answers, when the relay has no account at all, the clear 503 a request gets
// (Server.unavailable), rather than an empty list that Codex reads as "No models are available"
// and then retries a request into for half a minute before the reason shows; it reports
// whether it did.
func (s *Server) noAccounts(w http.ResponseWriter) bool {
	if len(s.pool.List()) > 0 {
		return false
	}
	writeError(w, s.unavailable(pool.Dry{}, ""))
	return true
}
