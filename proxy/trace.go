package proxy

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/codexrelay/codexrelay/proxy/internal/stat"
)

// Trace records one client request: what was asked, which accounts were tried and how long
// each phase took. It never holds a secret or a body.
type Trace struct {
	ID                  string        `json:"id"`
	Time                time.Time     `json:"time"`
	Route               string        `json:"route"`
	Model               string        `json:"model"`
	ResolvedModel       string        `json:"resolvedModel"`
	Stream              bool          `json:"stream"`
	Status              int           `json:"status"`
	Outcome             string        `json:"outcome"` // completed, failed, interrupted, canceled, rejected, error
	Error               string        `json:"error,omitempty"`
	Attempts            []Attempt     `json:"attempts"`
	LatencyBreakdown    Latency       `json:"latencyBreakdown"`
	ModelCatalogRefresh RefreshCounts `json:"modelCatalogRefresh"`
	Serialization       Serialization `json:"serialization"`
	DroppedTools        []string      `json:"droppedTools,omitempty"`
	Bytes               int64         `json:"bytes"` // bytes relayed to the client
	// Transport is how the client came: "http" or "websocket" (one trace per turn).
	Transport string `json:"transport"`
	// ClientBytes is the size of the client's request (a WebSocket frame for a turn);
	// UpstreamBytes sums the bodies (or frames) sent upstream, every attempt included.
	ClientBytes   int64 `json:"clientBytes"`
	UpstreamBytes int64 `json:"upstreamBytes"`
	// Incremental says that a WebSocket turn went upstream as the client sent it (new items
	// after previous_response_id) rather than with the conversation replayed.
	Incremental bool `json:"incremental,omitempty"`
	// Replayed says what an HTTP request that continued a response the relay served (from a
	// Chat Completions account) was sent in place of its previous_response_id: the items the
	// relay kept of that conversation (served.go).
	Replayed *Replay `json:"replayed,omitempty"`
	// SealedOmitted counts the sealed parts another account sealed (reasoning and compaction
	// items, multi-agent function calls with their outputs, content blocks of an agent
	// message) that were left out of what the serving account received, and
	// SealedOmittedParts names them, by item type ("reasoning", "function_call",
	// "function_call_output", "agent_message content", ...). SealedRetry says that the account
	// refused sealed content it was sent and the request was retried on it without it.
	// TurnStateOmitted says that the client's x-codex-turn-state (a header, or a socket
	// frame's client_metadata), issued by another account, was not sent to the serving one.
	SealedOmitted      int            `json:"sealedOmitted,omitempty"`
	SealedOmittedParts map[string]int `json:"sealedOmittedParts,omitempty"`
	// CompactionRemade counts the compaction items another account sealed that the serving
	// account received as its own compaction of the same conversation, re-made from the
	// request that produced them (compaction.go; an attempt of Kind "compaction" made it in this
	// request, else an earlier one had).
	CompactionRemade int  `json:"compactionRemade,omitempty"`
	SealedRetry      bool `json:"sealedRetry,omitempty"`
	TurnStateOmitted bool `json:"turnStateOmitted,omitempty"`
	// ResponsesLite is the form a Responses Lite request went in to the serving account:
	// "lite" (as the client sent it, with the marker) or "classic" (its tools moved to the
	// top-level tools, for an account that takes no Lite body); "" for a request that is not
	// Lite. ReroutedFrom is the model the client's request named when the upstream said, in
	// response.metadata, that it served another (ResolvedModel is then the one it served).
	ResponsesLite string `json:"responsesLite,omitempty"`
	ReroutedFrom  string `json:"reroutedFrom,omitempty"`
	// ServiceTier is the service tier the client asked for in service_tier ("priority" for
	// Codex's Fast mode, its older name "fast" included; "" when it named none).
	// ServiceTierOmitted says that the serving account's backend does not serve that tier
	// (flex, auto and scale on a ChatGPT account, any tier on a Chat Completions account reached
	// through translation): service_tier was left out of what it received, and the request was
	// served at the account's default tier.
	ServiceTier        string `json:"serviceTier,omitempty"`
	ServiceTierOmitted bool   `json:"serviceTierOmitted,omitempty"`
	// HeldMs is how long the request waited for a resting pool before it was served.
	HeldMs float64 `json:"heldMs,omitempty"`
	// Account is the account that answered ("" when none did); Usage the tokens its answer
	// reported (nil when it reported none).
	Account string `json:"account,omitempty"`
	Usage   *Usage `json:"usage,omitempty"`
	// Session is the request's affinity key (prompt_cache_key or the session header) and
	// Project the workspace the Codex CLI named in x-codex-turn-metadata ("" when none).
	Session string `json:"session,omitempty"`
	Project string `json:"project,omitempty"`
	// Path is the path of a call that is no model request: a ChatGPT backend call (route
	// "chatgpt") or a route the relay does not serve (route "unserved").
	Path string `json:"path,omitempty"`
}

// Background reports whether t is of a call Codex makes of its ChatGPT backend for itself (its
// limits, plugins, settings: RouteChatGPT), no request of the user's: it counts neither among
// the requests nor their errors, its trace is kept apart from theirs, and the dashboard folds
// them under the requests.
func (t *Trace) Background() bool { return t.Route == RouteChatGPT }

// Attempt is one upstream try of a request. Kind says what a try that was not the request
// itself did: "compaction" re-made the conversation's compaction on the account first
// (compaction.go).
type Attempt struct {
	Account string  `json:"account"`
	Status  int     `json:"status"` // HTTP status, 0 when no response arrived
	Ms      float64 `json:"ms"`
	Error   string  `json:"error,omitempty"`
	Kind    string  `json:"kind,omitempty"`
}

// Latency is the trace's latencyBreakdown: preparation (body read, parse, model resolution),
// upstream headers (from the first attempt's start to the chosen attempt's headers) and total.
type Latency struct {
	PreparationMs     float64 `json:"preparationMs"`
	UpstreamHeadersMs float64 `json:"upstreamHeadersMs"`
	TotalMs           float64 `json:"totalMs"`
}

// RefreshCounts counts model catalog refreshes by mode (stale-while-revalidate): background (stale catalog
// served while refreshing), blocking (waited for a refresh), shared (joined a refresh under way).
type RefreshCounts struct {
	Background int64 `json:"background"`
	Blocking   int64 `json:"blocking"`
	Shared     int64 `json:"shared"`
}

// Serialization counts upstream body builds (the serialization cache): hits reuse a built body, misses are
// full serializations of cacheable bodies, direct are bodies built without the cache.
type Serialization struct {
	Hits   int64 `json:"hits"`
	Misses int64 `json:"misses"`
	Direct int64 `json:"direct"`
}

// traceRing keeps the most recent traces: the clients' requests in one ring, and the ChatGPT
// backend calls (route chatgpt: Codex's own background reads of its plugins, usage and
// analytics, one a minute while it idles) in a smaller one of their own, so that those never
// push a client's requests out. recent merges both in the order they ended.
type traceRing struct {
	mu         sync.Mutex
	main, side ring
	seq        uint64 // traces added so far
}

// ring is a fixed number of traces, each with the sequence number it was added with.
type ring struct {
	buf  []Trace
	seqs []uint64
	next int
	full bool
}

// sideShare is the backend calls' ring's size, as a share of the requests' (at least one).
const sideShare = 5

func newTraceRing(n int) *traceRing {
	side := max(n/sideShare, 1)
	return &traceRing{main: ring{buf: make([]Trace, n), seqs: make([]uint64, n)},
		side: ring{buf: make([]Trace, side), seqs: make([]uint64, side)}}
}

func (r *traceRing) add(t Trace) {
	r.mu.Lock()
	r.seq++
	g := &r.main
	if t.Background() {
		g = &r.side
	}
	g.buf[g.next], g.seqs[g.next] = t, r.seq
	g.next++
	if g.next == len(g.buf) {
		g.next, g.full = 0, true
	}
	r.mu.Unlock()
}

// len is how many traces g holds.
func (g *ring) len() int {
	if g.full {
		return len(g.buf)
	}
	return g.next
}

// at is g's i-th newest trace (0: the newest) and its sequence number.
func (g *ring) at(i int) (*Trace, uint64) {
	idx := (g.next - 1 - i + len(g.buf)) % len(g.buf)
	return &g.buf[idx], g.seqs[idx]
}

// compact copies every kept trace's strings and slices into fresh memory. The originals were
// allocated amid a burst of requests, one here and one there, and each keeps a whole span of
// the heap in use; copied while the relay is idle, they sit together, and the spans they
// pinned can go back to the system.
func (r *traceRing) compact() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clone := func(s string) string { return strings.Clone(s) }
	for _, g := range []*ring{&r.main, &r.side} {
		for i := range g.buf {
			t := &g.buf[i]
			if t.ID == "" {
				continue
			}
			t.ID, t.Model, t.ResolvedModel, t.Error = clone(t.ID), clone(t.Model), clone(t.ResolvedModel), clone(t.Error)
			t.ServiceTier, t.Session, t.Project, t.Path = clone(t.ServiceTier), clone(t.Session), clone(t.Project), clone(t.Path)
			t.Attempts = slices.Clone(t.Attempts)
			for j := range t.Attempts {
				t.Attempts[j].Account, t.Attempts[j].Error = clone(t.Attempts[j].Account), clone(t.Attempts[j].Error)
			}
			t.DroppedTools = slices.Clone(t.DroppedTools)
			for j := range t.DroppedTools {
				t.DroppedTools[j] = clone(t.DroppedTools[j])
			}
		}
	}
}

// recent returns up to limit traces (0: all kept), newest first: both rings merged in the
// order their traces were added (as the requests ended).
func (r *traceRing) recent(limit int) []Trace {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.main.len() + r.side.len()
	if limit <= 0 || limit > n {
		limit = n
	}
	out := make([]Trace, 0, limit)
	i, j := 0, 0
	for len(out) < limit {
		var a, b *Trace
		var sa, sb uint64
		if i < r.main.len() {
			a, sa = r.main.at(i)
		}
		if j < r.side.len() {
			b, sb = r.side.at(j)
		}
		if a != nil && (b == nil || sa > sb) {
			out, i = append(out, *a), i+1
		} else {
			out, j = append(out, *b), j+1
		}
	}
	return out
}

// slogLevelFor logs ordinary requests at debug level and failures at warn.
func slogLevelFor(t Trace) slog.Level {
	switch {
	case t.Outcome == OutcomeRejected && t.Status < 500 && t.Status != 429:
		return slog.LevelInfo
	case t.Status >= 400 || t.Outcome == OutcomeInterrupted || t.Outcome == OutcomeFailed || t.Outcome == OutcomeError:
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// medianPreparation is the median preparationMs of the kept requests that reached an upstream
// (a backend call prepares nothing).
func (r *traceRing) medianPreparation() float64 {
	r.mu.Lock()
	n := r.main.len()
	xs := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		if t := &r.main.buf[i]; len(t.Attempts) > 0 {
			xs = append(xs, t.LatencyBreakdown.PreparationMs)
		}
	}
	r.mu.Unlock()
	return stat.Quantile(xs, 0.5)
}
