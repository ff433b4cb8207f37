package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codexrelay/codexrelay/proxy/pool"
)

// CatalogOptions configure the model catalog (README: "The serialization cache and the catalog refresh").
type CatalogOptions struct {
	TTL                  time.Duration // MODELS_CACHE_MS; default 10 min
	StaleWhileRevalidate bool          // serve a stale catalog while it refreshes (MODELS_STALE_WHILE_REVALIDATE)
	StaleMaxAge          time.Duration // oldest catalog served stale (MODELS_STALE_MAX_AGE_MS); default 30 min
	// RefreshInterval is the period of the scheduled blocking refresh (MODELS_REFRESH_INTERVAL_MS);
	// 0 means the TTL, negative means off.
	RefreshInterval time.Duration
	// ClientVersion is sent to ChatGPT's models endpoint; an old one hides new models.
	ClientVersion string
	// DiscoveryTimeout bounds one account's model listing (default 15 s).
	DiscoveryTimeout time.Duration
	// Discover, when set, lists an account's models instead of asking its upstream (an
	// embedder with its own list, a test, a benchmark).
	Discover func(ctx context.Context, a Account) ([]Discovered, error)
}

const defaultClientVersion = "0.171.0"

// Discovered is one model an account lists.
type Discovered struct {
	ID string
	// Codex is the entry as a ChatGPT account's backend gave it (passed through to Codex).
	Codex json.RawMessage
	// UnsupportedTools are tool types the entry says the model does not take.
	UnsupportedTools []string
	// Lite is the entry's use_responses_lite (nil: it says nothing): whether the backend takes
	// the model's requests in the Responses Lite form (lite.go).
	Lite *bool
}

// discoverFunc lists the models of one account.
type discoverFunc func(ctx context.Context, m *member) ([]Discovered, error)

// modelEntry is one model of the merged catalog.
type modelEntry struct {
	Discovered
	Accounts []string // accounts that list it, in priority order
}

// catalogState is an immutable snapshot of the catalog, swapped whole on each refresh.
type catalogState struct {
	// version is the client_version the lists were read with.
	version string
	at      time.Time // when it was built
	expired bool      // invalidated (accounts changed): refresh on next use
	models  map[string]*modelEntry
	order   []string
	// unlisted are enabled accounts with no good list yet: they may serve anything.
	unlisted map[string]bool
	listed   int // accounts with a good list
	// members are the accounts it was built from (listed or not).
	members map[string]bool
}

// accountList is the last good list of one account and its last error.
type accountList struct {
	models []Discovered
	ok     bool
	err    string
}

// refreshCall is a refresh under way; done closes when it ends.
type refreshCall struct{ done chan struct{} }

// catalog merges the model lists of every enabled account. Requests use it through resolve,
// which implements the stale-while-revalidate rules the README describes.
type catalog struct {
	s        *Server
	discover discoverFunc
	timeout  time.Duration
	// version is the client_version the ChatGPT catalog is read with (and every upstream call
	// names): the configured one, raised to the newest a client asked the catalog with.
	version  atomic.Pointer[string]
	interval time.Duration

	swr      atomic.Bool
	ttl      atomic.Int64 // ns
	staleMax atomic.Int64 // ns
	state    atomic.Pointer[catalogState]

	mu       sync.Mutex
	lists    map[string]*accountList
	inflight *refreshCall
	lastErr  string

	background, blocking, shared atomic.Int64
	refreshes                    atomic.Int64 // refreshes run
}

func newCatalog(s *Server, opt CatalogOptions) *catalog {
	if opt.TTL <= 0 {
		opt.TTL = 10 * time.Minute
	}
	if opt.StaleMaxAge < 0 {
		opt.StaleMaxAge = 0
	}
	if opt.RefreshInterval == 0 {
		opt.RefreshInterval = opt.TTL
	}
	if opt.ClientVersion == "" {
		opt.ClientVersion = defaultClientVersion
	}
	if opt.DiscoveryTimeout <= 0 {
		opt.DiscoveryTimeout = 15 * time.Second
	}
	c := &catalog{s: s, timeout: opt.DiscoveryTimeout, interval: opt.RefreshInterval,
		lists: map[string]*accountList{}}
	c.version.Store(&opt.ClientVersion)
	c.discover = c.discoverHTTP
	if opt.Discover != nil {
		c.discover = func(ctx context.Context, m *member) ([]Discovered, error) { return opt.Discover(ctx, m.Account) }
	}
	c.configure(opt.StaleWhileRevalidate, opt.StaleMaxAge, opt.TTL)
	return c
}

func (c *catalog) configure(swr bool, staleMax, ttl time.Duration) {
	c.swr.Store(swr)
	c.staleMax.Store(int64(staleMax))
	if ttl > 0 {
		c.ttl.Store(int64(ttl))
	}
}

// SetCatalogOptions changes stale-while-revalidate, its maximum age and the TTL at runtime
// (ttl <= 0 keeps the current one).
func (s *Server) SetCatalogOptions(swr bool, staleMaxAge, ttl time.Duration) {
	s.catalog.configure(swr, staleMaxAge, ttl)
}

func (c *catalog) ttlDuration() time.Duration { return time.Duration(c.ttl.Load()) }

// fresh reports whether st can be used as it is: younger than the TTL, not marked for refresh,
// read with the client version in force.
func (c *catalog) fresh(st *catalogState, now time.Time) bool {
	return st != nil && !st.expired && now.Sub(st.at) < c.ttlDuration() && st.version == c.clientVersion()
}

// invalidate marks the catalog for refresh: the accounts changed. Until the refresh has listed
// them, the enabled accounts the catalog was built without (added, enabled or renamed since)
// count as unlisted, so that they may take any model: a request served the stale catalog
// meanwhile (stale-while-revalidate) does not miss the account that was just added while the
// others are disabled or resting.
func (c *catalog) invalidate() {
	members := c.s.pool.List()
	for {
		old := c.state.Load()
		if old == nil {
			return
		}
		next := *old
		next.expired = true
		next.unlisted = maps.Clone(old.unlisted)
		if next.unlisted == nil {
			next.unlisted = map[string]bool{}
		}
		for _, m := range members {
			if !m.Disabled && !old.members[m.Name] {
				next.unlisted[m.Name] = true
			}
		}
		if c.state.CompareAndSwap(old, &next) {
			return
		}
	}
}

// resolve returns the catalog a request should use, refreshing it as stale-while-revalidate says: a fresh
// catalog at once; none yet blocks; a stale one younger than the maximum age is served while
// it refreshes in the background (when stale-while-revalidate is on); an older one blocks.
// Concurrent refreshes are merged. The counts say what this request did.
func (c *catalog) resolve(ctx context.Context) (*catalogState, RefreshCounts, error) {
	st := c.state.Load()
	now := c.s.now()
	if c.fresh(st, now) {
		return st, RefreshCounts{}, nil
	}
	if st != nil && c.swr.Load() && now.Sub(st.at) < time.Duration(c.staleMax.Load()) {
		c.start()
		c.background.Add(1)
		return st, RefreshCounts{Background: 1}, nil
	}
	return c.wait(ctx)
}

// wait starts or joins a refresh and waits for it.
func (c *catalog) wait(ctx context.Context) (*catalogState, RefreshCounts, error) {
	call, started := c.start()
	var counts RefreshCounts
	if started {
		counts.Blocking = 1
		c.blocking.Add(1)
	} else {
		counts.Shared = 1
		c.shared.Add(1)
	}
	select {
	case <-call.done:
		return c.state.Load(), counts, nil
	case <-ctx.Done():
		return nil, counts, ctx.Err()
	}
}

// start begins a refresh unless one is under way; either way it returns the call to wait on.
func (c *catalog) start() (*refreshCall, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight != nil {
		return c.inflight, false
	}
	call := &refreshCall{done: make(chan struct{})}
	c.inflight = call
	go c.run(call)
	return call, true
}

// run refreshes every enabled account's list at once (not one after the other) and swaps in
// the merged catalog. An account whose listing fails keeps its last good list.
func (c *catalog) run(call *refreshCall) {
	defer func() {
		c.mu.Lock()
		c.inflight = nil
		c.mu.Unlock()
		close(call.done)
		c.s.changes.Raise()
	}()
	c.refreshes.Add(1)
	version := c.clientVersion()
	var members []*member
	for _, m := range c.s.pool.List() {
		if !m.Disabled {
			members = append(members, m)
		}
	}
	type result struct {
		models []Discovered
		err    error
	}
	results := make([]result, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
			defer cancel()
			models, err := c.discover(ctx, m)
			results[i] = result{models, err}
		}()
	}
	wg.Wait()

	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []string
	for i, m := range members {
		l := c.lists[m.Name]
		if l == nil {
			l = &accountList{}
			c.lists[m.Name] = l
		}
		if err := results[i].err; err != nil {
			l.err = err.Error()
			errs = append(errs, m.Name+": "+l.err)
			c.s.log.Warn("model discovery failed; keeping the last good list", "account", m.Name, "error", l.err)
			continue
		}
		l.models, l.ok, l.err = results[i].models, true, ""
	}
	c.lastErr = strings.Join(errs, "; ")
	st := c.merge(members)
	st.version = version
	c.state.Store(st)
}

// merge builds a catalog state from the lists of members (c.mu held).
func (c *catalog) merge(members []*member) *catalogState {
	st := &catalogState{at: c.s.now(), models: map[string]*modelEntry{}, unlisted: map[string]bool{}, members: map[string]bool{}}
	for _, m := range members {
		st.members[m.Name] = true
		l := c.lists[m.Name]
		if l == nil || !l.ok {
			st.unlisted[m.Name] = true
			continue
		}
		st.listed++
		for _, d := range l.models {
			e := st.models[d.ID]
			if e == nil {
				e = &modelEntry{Discovered: d}
				st.models[d.ID] = e
				st.order = append(st.order, d.ID)
			} else if e.Codex == nil && d.Codex != nil {
				e.Codex, e.UnsupportedTools = d.Codex, d.UnsupportedTools
			}
			e.Accounts = append(e.Accounts, m.Name)
		}
	}
	return st
}

// startSchedule runs a blocking refresh every interval until the returned stop is called.
func (c *catalog) startSchedule() (stop func()) {
	if c.interval < 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(c.interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				call, _ := c.start()
				<-call.done
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}

func (s *Server) catalogStats(now time.Time) CatalogStats {
	c := s.catalog
	cs := CatalogStats{
		AgeMs:         -1,
		SWREnabled:    c.swr.Load(),
		StaleMaxAgeMs: time.Duration(c.staleMax.Load()).Milliseconds(),
		TTLMs:         time.Duration(c.ttl.Load()).Milliseconds(),
		Refresh:       RefreshCounts{Background: c.background.Load(), Blocking: c.blocking.Load(), Shared: c.shared.Load()},
		Refreshes:     c.refreshes.Load(),
	}
	if st := c.state.Load(); st != nil {
		cs.AgeMs = now.Sub(st.at).Milliseconds()
		cs.Models = len(st.models)
		cs.AliasErrors = s.aliasErrors(st)
	}
	c.mu.Lock()
	cs.LastError = c.lastErr
	c.mu.Unlock()
	return cs
}

// discoverHTTP lists an account's models: {base}/models?client_version=V for ChatGPT accounts
// ({"models":[{slug,...}]}), {base}/models for OpenAI-compatible ones ({"data":[{id}]}). It is
// a side call of the pool's (pool.Call): a token the upstream stopped taking is renewed once,
// and a key it still refuses is key_rejected before any request finds that out.
func (c *catalog) discoverHTTP(ctx context.Context, m *member) ([]Discovered, error) {
	u := m.BaseURL + "/models"
	if m.Kind == KindChatGPT {
		u += "?client_version=" + url.QueryEscape(c.clientVersion())
	}
	var body []byte
	var err error
	out := c.s.pool.Call(ctx, m, "", func(cred Credential) *pool.Said {
		var w *pool.Said
		body, w, err = c.s.sideCall(ctx, m, cred, http.MethodGet, u, nil, 8<<20)
		if err != nil {
			err = fmt.Errorf("listing models: %s", describeTransportError(err, cred.Token))
		} else if w != nil {
			err = fmt.Errorf("listing models: HTTP %d %s %s", w.Status, w.Code, truncate(w.Msg, 160))
			if m.Kind == KindOpenAI {
				w.Where = "the upstream refused the API key: listing models: HTTP " + strconv.Itoa(w.Status)
			}
		}
		return w
	})
	switch {
	case out.Err != nil:
		return nil, out.Err
	case err != nil:
		return nil, err
	}
	return parseModelList(body)
}

// parseModelList reads either list shape; Codex entries are kept as they came.
func parseModelList(body []byte) ([]Discovered, error) {
	var v struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		Models []json.RawMessage `json:"models"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("listing models: the answer is not a model list: %v", err)
	}
	var out []Discovered
	seen := map[string]bool{}
	for _, raw := range v.Models {
		var e struct {
			Slug               string   `json:"slug"`
			SupportsSearchTool *bool    `json:"supports_search_tool"`
			Unsupported        []string `json:"unsupported_tool_types"`
			Lite               *bool    `json:"use_responses_lite"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Slug == "" || seen[e.Slug] {
			continue
		}
		seen[e.Slug] = true
		d := Discovered{ID: e.Slug, Codex: raw, UnsupportedTools: e.Unsupported, Lite: e.Lite}
		if e.SupportsSearchTool != nil && !*e.SupportsSearchTool && !slices.Contains(d.UnsupportedTools, "tool_search") {
			d.UnsupportedTools = append(d.UnsupportedTools, "tool_search")
		}
		out = append(out, d)
	}
	for _, d := range v.Data {
		if d.ID != "" && !seen[d.ID] {
			seen[d.ID] = true
			out = append(out, Discovered{ID: d.ID})
		}
	}
	if v.Models == nil && v.Data == nil {
		return nil, fmt.Errorf("listing models: the answer has neither data nor models")
	}
	return out, nil
}

// suggestions names the catalog models closest to want.
func (st *catalogState) suggestions(want string) []string {
	type scored struct {
		id string
		d  int
	}
	var all []scored
	lw := strings.ToLower(want)
	for _, id := range st.order {
		li := strings.ToLower(id)
		d := levenshtein(lw, li)
		if strings.Contains(li, lw) || strings.Contains(lw, li) {
			d = min(d, 1)
		}
		all = append(all, scored{id, d})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].d < all[j].d })
	var out []string
	for _, s := range all {
		if len(out) == 3 || s.d > max(3, len(want)/2) {
			break
		}
		out = append(out, s.id)
	}
	return out
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
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

// entry is model's entry in the catalog (nil: none, or no catalog at all).
func (st *catalogState) entry(model string) *modelEntry {
	if st == nil {
		return nil
	}
	return st.models[model]
}
