package proxy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Usage: the tokens an upstream says a request cost, read from what the respond phase relays
// anyway (the terminal event of a Responses stream, the usage chunk of a Chat stream, a whole
// answer), for the trace and the usage ledger. Nothing is parsed for it that is not at the end
// of an answer.

// Usage is the token usage of one request, as the upstream reported it.
type Usage struct {
	InputTokens int64 `json:"inputTokens"`
	// CachedTokens are the part of InputTokens read from the prompt cache.
	CachedTokens int64 `json:"cachedTokens"`
	OutputTokens int64 `json:"outputTokens"`
	// ReasoningTokens are the part of OutputTokens spent reasoning.
	ReasoningTokens int64 `json:"reasoningTokens"`
}

// wireUsage is a usage object in either protocol's names.
type wireUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	PromptTokens       int64 `json:"prompt_tokens"`
	CompletionTokens   int64 `json:"completion_tokens"`
	InputTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// parseTokenUsage reads the usage of a Responses object, a Responses event carrying one
// ({"response":{...}}), a Chat completion or a Chat chunk. nil when there is none.
func parseTokenUsage(b []byte) *Usage {
	o, err := payload.Parse(b)
	if err != nil {
		return nil
	}
	if r := responseObject(o); r != nil {
		o = r
	}
	raw, ok := o.Get("usage")
	if !ok || payload.KindOf(raw) != payload.KindObject {
		return nil
	}
	var w wireUsage
	if json.Unmarshal(raw, &w) != nil {
		return nil
	}
	u := &Usage{InputTokens: w.InputTokens + w.PromptTokens, OutputTokens: w.OutputTokens + w.CompletionTokens}
	for _, d := range []*struct {
		CachedTokens int64 `json:"cached_tokens"`
	}{w.InputTokensDetails, w.PromptTokensDetails} {
		if d != nil {
			u.CachedTokens += d.CachedTokens
		}
	}
	for _, d := range []*struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	}{w.OutputTokensDetails, w.CompletionTokensDetails} {
		if d != nil {
			u.ReasoningTokens += d.ReasoningTokens
		}
	}
	return u
}

// noteUsage records in the trace the usage b carries, if any.
func (x *exchange) noteUsage(b []byte) {
	if u := parseTokenUsage(b); u != nil {
		x.t.Usage = u
	}
}

// noteChunkUsage records the usage of a Chat chunk that carries one (the last chunk, when the
// client or the relay asked for include_usage): most chunks are skipped by a byte search.
func (x *exchange) noteChunkUsage(data []byte) {
	if bytes.Contains(data, []byte(`"usage":{`)) {
		x.noteUsage(data)
	}
}

// projectOf names the workspace the Codex CLI says a turn runs in: its x-codex-turn-metadata
// (a header, or the same key in the body's client_metadata) is a JSON object whose cwd, or
// failing that its first workspace path, ends with the project's directory name.
func projectOf(header string, obj *payload.Object) string {
	meta := header
	if meta == "" && obj != nil {
		if raw, ok := obj.Get("client_metadata"); ok && payload.KindOf(raw) == payload.KindObject {
			var cm map[string]json.RawMessage
			if json.Unmarshal(raw, &cm) == nil {
				json.Unmarshal(cm["x-codex-turn-metadata"], &meta)
			}
		}
	}
	if meta == "" || len(meta) > 64<<10 {
		return ""
	}
	var v struct {
		Cwd        string                     `json:"cwd"`
		Workspaces map[string]json.RawMessage `json:"workspaces"`
	}
	if json.Unmarshal([]byte(meta), &v) != nil {
		return ""
	}
	dir := v.Cwd
	if dir == "" {
		for p := range v.Workspaces {
			if dir == "" || p < dir {
				dir = p
			}
		}
	}
	dir = strings.TrimRight(strings.ReplaceAll(dir, `\`, "/"), "/")
	if dir == "" {
		return ""
	}
	// Copied: the name is kept (trace, ledger), the metadata it is part of is not.
	return strings.Clone(truncate(path.Base(dir), 120))
}

// tokenCounters are the tokens answered since the relay started, by account and served model,
// for /metrics.
type tokenCounters struct {
	mu sync.Mutex
	m  map[[2]string]*Usage
}

func (c *tokenCounters) add(account, model string, u *Usage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[2]string]*Usage{}
	}
	t := c.m[[2]string{account, model}]
	if t == nil {
		t = &Usage{}
		c.m[[2]string{account, model}] = t
	}
	t.InputTokens += u.InputTokens
	t.CachedTokens += u.CachedTokens
	t.OutputTokens += u.OutputTokens
	t.ReasoningTokens += u.ReasoningTokens
}

// each calls f for every account and model, in order, with a copy taken under the lock.
func (c *tokenCounters) each(f func(account, model string, u Usage)) {
	type entry struct {
		key [2]string
		u   Usage
	}
	c.mu.Lock()
	all := make([]entry, 0, len(c.m))
	for k, v := range c.m {
		all = append(all, entry{k, *v})
	}
	c.mu.Unlock()
	slices.SortFunc(all, func(a, b entry) int {
		return cmp.Or(strings.Compare(a.key[0], b.key[0]), strings.Compare(a.key[1], b.key[1]))
	})
	for _, e := range all {
		f(e.key[0], e.key[1], e.u)
	}
}
