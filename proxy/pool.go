package proxy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Account states as reported in stats.
const (
	StateReady      = "ready"
	StateCooldown   = "cooldown"
	StateNeedsLogin = "needs_login"
	// StateKeyRejected is an API key the upstream refused (401/403), when listing models or
	// serving; it clears when the key is replaced (a ChatGPT sign-in refused is needs_login).
	StateKeyRejected = "key_rejected"
	StateDisabled    = "disabled"
)

// Routing strategies: the order in which healthy accounts take requests (a session keeps its
// account while it stays healthy, whatever the strategy).
const (
	// StrategyPriority fills the accounts in list order: the first healthy one takes every
	// request, the next one only when it fails or rests.
	StrategyPriority = "priority"
	// StrategyRoundRobin has the healthy accounts take turns, in list order.
	StrategyRoundRobin = "round-robin"
	// StrategyMostQuotaLeft puts the accounts with the most quota left first: untouched
	// accounts (API keys among them), then the ChatGPT accounts whose windows are least used.
	StrategyMostQuotaLeft = "most-quota-left"
)

// Strategies lists the routing strategies, the default first.
var Strategies = []string{StrategyPriority, StrategyRoundRobin, StrategyMostQuotaLeft}

const (
	defaultCooldown   = 60 * time.Second
	modelBlockFor     = time.Hour
	affinityIdle      = time.Hour
	affinityMaxKeys   = 10000
	maxCooldownLength = 8 * 24 * time.Hour
)

// member is an account plus the runtime state the proxy keeps for it. A member is never
// changed once made: SetAccounts makes new members, so a request in flight keeps the account
// as it was when it started. The runtime state (health) is shared by the versions of one
// account, so it survives SetAccounts as long as the account keeps its key, kind and base URL.
type member struct {
	Account
	*health
}

// health is an account's runtime state: counters, cooldown, sign-in state, model blocks, quota.
type health struct {
	requests atomic.Int64
	failures atomic.Int64
	// noSocketUntil (unix nanoseconds) is when the upstream may be asked for a WebSocket again,
	// after it refused one (0: never refused).
	noSocketUntil atomic.Int64
	// workspaceID is the chatgpt-account-id of the credential last used (restWorkspace).
	workspaceID atomic.Pointer[string]

	mu             sync.Mutex
	cooldownUntil  time.Time
	cooldownReason string // CooldownRateLimit or CooldownFailing
	streak         int    // transient failures in a row
	rests          int    // rests in a row (each doubles the next)
	needsLogin     string // reason; "" when the credential works
	lastError      string
	modelBlocked   map[string]time.Time
	quota          *Quota
	credits        accountCredits // banked resets (credits.go)

	// changed is the relay's Signal (Server.Changes), raised when the state above changes.
	changed *Signal
}

func (m *member) stateLocked(now time.Time) string {
	switch {
	case m.Disabled:
		return StateDisabled
	case m.needsLogin != "" && m.Kind == KindOpenAI:
		return StateKeyRejected
	case m.needsLogin != "":
		return StateNeedsLogin
	case now.Before(m.cooldownUntil):
		return StateCooldown
	}
	return StateReady
}

// usable reports whether m may take a request for model now.
func (m *member) usable(model string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stateLocked(now) != StateReady {
		return false
	}
	if until, ok := m.modelBlocked[model]; ok {
		if now.Before(until) {
			return false
		}
		delete(m.modelBlocked, model)
	}
	return true
}

// sawCredential notes the workspace (chatgpt-account-id) of the credential m was last used with.
func (m *member) sawCredential(c Credential) {
	if c.AccountID != "" && m.workspace() != c.AccountID {
		id := c.AccountID
		m.workspaceID.Store(&id)
	}
}

func (m *member) workspace() string {
	if p := m.workspaceID.Load(); p != nil {
		return *p
	}
	return ""
}

func (m *member) coolDown(until time.Time, reason string) {
	m.mu.Lock()
	if until.After(m.cooldownUntil) {
		m.cooldownUntil, m.cooldownReason = until, CooldownRateLimit
	}
	m.lastError = reason
	m.mu.Unlock()
	m.changed.Raise()
}

// Why an account cools down (AccountStats.CooldownReason).
const (
	CooldownRateLimit = "rate_limit" // the upstream said so: 429, quota, usage limit
	CooldownFailing   = "failing"    // the breaker: it timed out or failed too often in a row
)

// Breaker says when an account that keeps failing rests, so that a hung or broken upstream
// costs at most one timeout per rest instead of one per request.
type Breaker struct {
	// Failures is how many transient failures in a row make an account rest (default 3); a
	// timeout makes it rest at once.
	Failures int
	// Rest is the first rest (default 30 s); each rest in a row doubles it, up to MaxRest
	// (default 10 min). A success starts over.
	Rest, MaxRest time.Duration
}

func (b Breaker) withDefaults() Breaker {
	if b.Failures <= 0 {
		b.Failures = 3
	}
	if b.Rest <= 0 {
		b.Rest = 30 * time.Second
	}
	if b.MaxRest <= 0 {
		b.MaxRest = 10 * time.Minute
	}
	return b
}

// fail records a transient failure of m (a timeout when timeout is set) and makes it rest when
// the breaker says so; it reports whether m now rests.
func (m *member) fail(now time.Time, timeout bool, reason string, b Breaker) bool {
	defer m.changed.Raise()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastError = reason
	m.streak++
	if !timeout && m.streak < b.Failures {
		return false
	}
	rest := b.Rest << min(m.rests, 20)
	if rest > b.MaxRest || rest <= 0 {
		rest = b.MaxRest
	}
	why := fmt.Sprintf("%d failures in a row", m.streak)
	if timeout {
		why = "a timeout"
	}
	m.rests++
	m.streak = 0
	if until := now.Add(rest); until.After(m.cooldownUntil) {
		m.cooldownUntil, m.cooldownReason = until, CooldownFailing
	}
	m.lastError = fmt.Sprintf("resting for %s after %s: %s", rest, why, reason)
	return true
}

// succeeded ends a run of failures: the next rest starts from the first length again.
func (m *member) succeeded() {
	m.mu.Lock()
	m.streak, m.rests = 0, 0
	m.mu.Unlock()
}

func (m *member) markNeedsLogin(reason string) {
	m.mu.Lock()
	m.needsLogin = reason
	m.lastError = reason
	m.mu.Unlock()
	m.changed.Raise()
}

func (m *member) blockModel(model string, until time.Time, reason string) {
	m.mu.Lock()
	if m.modelBlocked == nil {
		m.modelBlocked = make(map[string]time.Time)
	}
	m.modelBlocked[model] = until
	m.lastError = reason
	m.mu.Unlock()
	m.changed.Raise()
}

func (m *member) setLastError(reason string) {
	m.mu.Lock()
	m.lastError = reason
	m.mu.Unlock()
	m.changed.Raise()
}

// reset forgets cooldowns, model blocks and a needs-login mark (after a new sign-in).
func (m *member) reset() {
	m.mu.Lock()
	m.cooldownUntil, m.cooldownReason, m.streak, m.rests = time.Time{}, "", 0, 0
	m.needsLogin = ""
	m.lastError = ""
	m.modelBlocked = nil
	m.mu.Unlock()
	m.changed.Raise()
}

// key identifies an account across SetAccounts: its ID, else its name.
func (a *Account) key() string {
	if a.ID != "" {
		return a.ID
	}
	return a.Name
}

// pool holds the accounts in priority order, their runtime state and session affinity.
type pool struct {
	mu       sync.RWMutex
	members  []*member
	byKey    map[string]*member
	strategy string
	rr       atomic.Uint64

	affMu    sync.Mutex
	affinity map[string]affinityEntry

	// changed is the relay's Signal, handed to each account's health.
	changed *Signal
}

type affinityEntry struct {
	account string
	used    time.Time
}

// set replaces the account list with new members, keeping the runtime state of accounts that
// keep their key, kind and base URL, and returns the accounts that are new.
func (p *pool) set(accounts []Account) (added []*member) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := make([]*member, 0, len(accounts))
	byKey := make(map[string]*member, len(accounts))
	for _, a := range accounts {
		if a.API == "" {
			a.API = APIResponses
		}
		a.BaseURL = strings.TrimRight(a.BaseURL, "/")
		m := &member{Account: a}
		if old := p.byKey[a.key()]; old != nil && old.Kind == a.Kind && old.BaseURL == a.BaseURL {
			m.health = old.health
		} else {
			m.health = &health{changed: p.changed}
			added = append(added, m)
		}
		next = append(next, m)
		byKey[a.key()] = m
	}
	// Stable: equal priorities keep list order.
	slices.SortStableFunc(next, func(a, b *member) int { return cmp.Compare(a.Priority, b.Priority) })
	p.members, p.byKey = next, byKey
	p.changed.Raise()
	return added
}

// get returns the current account with this key, or nil.
func (p *pool) get(key string) *member {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.byKey[key]
}

// current reports whether m is still an account of the pool and enabled: a request that
// rotates after SetAccounts removed or disabled an account does not try it.
func (p *pool) current(m *member) bool {
	p.mu.RLock()
	cur := p.byKey[m.key()]
	p.mu.RUnlock()
	return cur != nil && !cur.Disabled && cur.health == m.health
}

func (p *pool) setStrategy(s string) {
	p.mu.Lock()
	p.strategy = s
	p.mu.Unlock()
}

// anyChat reports whether an account of the pool speaks Chat Completions only.
func (p *pool) anyChat() bool {
	for _, m := range p.list() {
		if isChatAccount(m) {
			return true
		}
	}
	return false
}

func (p *pool) list() []*member {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.members
}

// candidates returns the accounts that may take a request for model, in the order to try
// them: the session's affine account first (while it stays usable), then by priority, with
// equal priorities in list order or in turn depending on the strategy.
func (p *pool) candidates(model, session string, now time.Time, serves func(*member) bool) []*member {
	p.mu.RLock()
	all, strategy := p.members, p.strategy
	p.mu.RUnlock()
	out := make([]*member, 0, len(all))
	for _, m := range all {
		if serves(m) && m.usable(model, now) {
			out = append(out, m)
		}
	}
	var turn uint64
	if strategy == StrategyRoundRobin {
		turn = p.rr.Add(1) - 1
	}
	order(out, strategy, turn)
	if session != "" {
		if key := p.affine(session, now); key != "" {
			for i, m := range out {
				if m.key() == key {
					copy(out[1:i+1], out[:i])
					out[0] = m
					break
				}
			}
		}
	}
	return out
}

// anyUsable reports whether some account may take a request for model now (without taking a
// round-robin turn).
func (p *pool) anyUsable(model string, now time.Time) bool {
	for _, m := range p.list() {
		if m.usable(model, now) {
			return true
		}
	}
	return false
}

// next is the account a new request (any model, no session) would go to first, without
// taking a round-robin turn; nil when none is usable.
func (p *pool) next(now time.Time) *member {
	p.mu.RLock()
	all, strategy := p.members, p.strategy
	p.mu.RUnlock()
	var out []*member
	for _, m := range all {
		if m.usable("", now) {
			out = append(out, m)
		}
	}
	order(out, strategy, p.rr.Load())
	if len(out) == 0 {
		return nil
	}
	return out[0]
}

// order sorts usable accounts into the order a strategy tries them: by priority group, and
// within a group in list order (priority), in turn (round-robin, turn being the request's
// turn) or by quota left (most-quota-left).
func order(out []*member, strategy string, turn uint64) {
	slices.SortStableFunc(out, func(a, b *member) int {
		if c := cmp.Compare(a.Priority, b.Priority); c != 0 || strategy != StrategyMostQuotaLeft {
			return c
		}
		return cmp.Compare(a.usedScore(), b.usedScore())
	})
	if strategy == StrategyRoundRobin && len(out) > 1 {
		for i := 0; i < len(out); {
			j := i
			for j < len(out) && out[j].Priority == out[i].Priority {
				j++
			}
			group := out[i:j]
			rotate(group, int(turn%uint64(len(group))))
			i = j
		}
	}
}

func rotate(s []*member, k int) {
	if k == 0 {
		return
	}
	slices.Reverse(s[:k])
	slices.Reverse(s[k:])
	slices.Reverse(s)
}

func (p *pool) affine(session string, now time.Time) string {
	p.affMu.Lock()
	defer p.affMu.Unlock()
	e, ok := p.affinity[session]
	if !ok || now.Sub(e.used) > affinityIdle {
		return ""
	}
	return e.account
}

// remember binds session to the account (by key) that served it.
func (p *pool) remember(session, account string, now time.Time) {
	if session == "" {
		return
	}
	p.affMu.Lock()
	defer p.affMu.Unlock()
	if p.affinity == nil {
		p.affinity = make(map[string]affinityEntry)
	}
	if _, ok := p.affinity[session]; !ok && len(p.affinity) >= affinityMaxKeys {
		// Full: drop idle entries; if none is idle, drop the least recently used.
		var oldestKey string
		var oldest time.Time
		for k, e := range p.affinity {
			if now.Sub(e.used) > affinityIdle {
				delete(p.affinity, k)
			} else if oldestKey == "" || e.used.Before(oldest) {
				oldestKey, oldest = k, e.used
			}
		}
		if len(p.affinity) >= affinityMaxKeys {
			delete(p.affinity, oldestKey)
		}
	}
	p.affinity[session] = affinityEntry{account: account, used: now}
}

// unavailable explains why no account can take a request for model: an error for the client
// that lists each account's state. When every usable-in-principle account is cooling down it
// is a 429 usage_limit_reached with the earliest reset, as the Codex CLI expects.
func (p *pool) unavailable(model string, now time.Time) *apiError {
	all := p.list()
	if len(all) == 0 {
		return &apiError{Status: 503, Type: "server_error", Code: "no_accounts",
			Message: "Codex Relay has no upstream account yet: add one with `codexrelay accounts add --name NAME --kind openai --base-url URL` (the API key on stdin), sign in with `codexrelay accounts add --kind chatgpt`, or import the Codex CLI login with `codexrelay accounts import-codex`."}
	}
	var parts []string
	var earliest time.Time
	cooling := false
	for _, m := range all {
		m.mu.Lock()
		st := m.stateLocked(now)
		desc := m.Name + ": " + st
		switch st {
		case StateCooldown:
			cooling = true
			if earliest.IsZero() || m.cooldownUntil.Before(earliest) {
				earliest = m.cooldownUntil
			}
			desc += " until " + m.cooldownUntil.UTC().Format(time.RFC3339)
		case StateNeedsLogin, StateKeyRejected:
			desc += " (" + m.needsLogin + ")"
		case StateReady:
			if until, ok := m.modelBlocked[model]; ok && now.Before(until) {
				desc += fmt.Sprintf(" (model %q not served until %s)", model, until.UTC().Format(time.RFC3339))
			}
		}
		m.mu.Unlock()
		parts = append(parts, desc)
	}
	msg := "no upstream account can take this request now; " + strings.Join(parts, "; ")
	if cooling {
		wait := int(earliest.Sub(now).Seconds() + 0.999)
		return &apiError{Status: 429, Type: "usage_limit_reached", Code: "usage_limit_reached", Message: msg,
			ResetsAt: earliest.Unix(), RetryAfter: max(wait, 1)}
	}
	return &apiError{Status: 503, Type: "server_error", Code: "no_usable_account",
		Message: msg + ". Enable an account or sign in again (`codexrelay accounts list`)."}
}
