package pool

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
	// StrategyResetFirst spends first the quota that expires first: the account whose binding
	// window (the one with the least left) resets soonest goes first while it has quota; the
	// accounts whose reset is unknown (API keys, no reading yet) after them, in list order.
	StrategyResetFirst = "reset-first"
)

// Strategies lists the routing strategies, the default first.
var Strategies = []string{StrategyPriority, StrategyRoundRobin, StrategyMostQuotaLeft, StrategyResetFirst}

const (
	defaultCooldown   = 60 * time.Second
	modelBlockFor     = time.Hour
	affinityIdle      = time.Hour
	affinityMaxKeys   = 10000
	maxCooldownLength = 8 * 24 * time.Hour
)

// Pool holds the accounts in priority order, their runtime state and session affinity.
type Pool struct {
	mu       sync.RWMutex
	members  []*Member
	byKey    map[string]*Member
	strategy string
	rr       atomic.Uint64

	affMu    sync.Mutex
	affinity map[string]affinityEntry

	bmu     sync.RWMutex
	buckets buckets // which bucket meters which model (windows.go)

	changed func()           // raised when an account or the list changes
	now     func() time.Time // the clock (a test's, or time.Now)
	breaker Breaker          // when a failing account rests
}

type affinityEntry struct {
	account string
	used    time.Time
}

// New makes an empty pool: changed is raised when an account or the list changes, now is the
// clock, b the breaker's rules.
func New(changed func(), now func() time.Time, b Breaker) *Pool {
	return &Pool{changed: changed, now: now, breaker: b.WithDefaults(), strategy: StrategyPriority}
}

func (p *Pool) raise() {
	if p.changed != nil {
		p.changed()
	}
}

// Set replaces the account list with new members, keeping the runtime state of accounts that
// keep their key, kind and base URL, and returns the accounts that are new.
func (p *Pool) Set(accounts []Account) (added []*Member) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := make([]*Member, 0, len(accounts))
	byKey := make(map[string]*Member, len(accounts))
	for _, a := range accounts {
		if a.API == "" {
			a.API = APIResponses
		}
		a.BaseURL = strings.TrimRight(a.BaseURL, "/")
		m := &Member{Account: a}
		if old := p.byKey[a.Key()]; old != nil && old.Kind == a.Kind && old.BaseURL == a.BaseURL {
			m.health = old.health
		} else {
			m.health = &health{changed: p.changed, pool: p}
			added = append(added, m)
		}
		next = append(next, m)
		byKey[a.Key()] = m
	}
	// Stable: equal priorities keep list order.
	slices.SortStableFunc(next, func(a, b *Member) int { return cmp.Compare(a.Priority, b.Priority) })
	p.members, p.byKey = next, byKey
	p.raise()
	return added
}

// Get returns the current account with this key, or nil.
func (p *Pool) Get(key string) *Member {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.byKey[key]
}

// Named returns the account called name, or nil.
func (p *Pool) Named(name string) *Member {
	for _, m := range p.List() {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Current reports whether m is still an account of the pool and enabled: a request that
// rotates after Set removed or disabled an account does not try it.
func (p *Pool) Current(m *Member) bool {
	cur := p.Get(m.Key())
	return cur != nil && !cur.Disabled && cur.health == m.health
}

// SetStrategy changes the order healthy accounts take requests in.
func (p *Pool) SetStrategy(s string) {
	p.mu.Lock()
	p.strategy = s
	p.mu.Unlock()
	p.raise()
}

// List is the accounts in priority order (not to be changed).
func (p *Pool) List() []*Member {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.members
}

// AnyChat reports whether an account of the pool speaks Chat Completions only.
func (p *Pool) AnyChat() bool {
	return slices.ContainsFunc(p.List(), func(m *Member) bool { return m.IsChat() })
}

// Candidates returns the accounts that may take a request for model, in the order to try
// them: the session's affine account first (while it stays usable), then by priority, with
// equal priorities in list order or in turn depending on the strategy.
func (p *Pool) Candidates(model, session string, now time.Time, serves func(*Member) bool) []*Member {
	p.mu.RLock()
	all, strategy := p.members, p.strategy
	p.mu.RUnlock()
	out := make([]*Member, 0, len(all))
	for _, m := range all {
		if serves(m) && m.Usable(model, now) {
			out = append(out, m)
		}
	}
	var turn uint64
	if strategy == StrategyRoundRobin {
		turn = p.rr.Add(1) - 1
	}
	order(out, strategy, turn, now)
	if key := p.affine(session, now); key != "" {
		for i, m := range out {
			if m.Key() == key {
				copy(out[1:i+1], out[:i])
				out[0] = m
				break
			}
		}
	}
	return out
}

// AnyUsable reports whether some account that serves (nil: any) may take a request for model
// now (without taking a round-robin turn).
func (p *Pool) AnyUsable(model string, now time.Time, serves func(*Member) bool) bool {
	return slices.ContainsFunc(p.List(), func(m *Member) bool {
		return (serves == nil || serves(m)) && m.Usable(model, now)
	})
}

// Next is the account a new request (any model, no session) would go to first, without
// taking a round-robin turn; nil when none is usable.
func (p *Pool) Next(now time.Time) *Member {
	p.mu.RLock()
	all, strategy := p.members, p.strategy
	p.mu.RUnlock()
	var out []*Member
	for _, m := range all {
		if m.Usable("", now) {
			out = append(out, m)
		}
	}
	order(out, strategy, p.rr.Load(), now)
	if len(out) == 0 {
		return nil
	}
	return out[0]
}

// order sorts usable accounts into the order a strategy tries them: by priority group, and
// within a group in list order (priority), in turn (round-robin, turn being the request's
// turn), by quota left (most-quota-left) or by the reset of their binding window
// (reset-first).
func order(out []*Member, strategy string, turn uint64, now time.Time) {
	if len(out) < 2 {
		return
	}
	keys := make(map[*Member]float64, len(out))
	for _, m := range out {
		switch strategy {
		case StrategyMostQuotaLeft:
			keys[m] = m.usedScore()
		case StrategyResetFirst:
			keys[m] = m.resetKey(now)
		}
	}
	slices.SortStableFunc(out, func(a, b *Member) int {
		if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
			return c
		}
		return cmp.Compare(keys[a], keys[b]) // 0 for the strategies that keep list order
	})
	if strategy == StrategyRoundRobin {
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

// resetKey orders accounts for reset-first: the seconds until its binding window resets, for
// an account that has quota left; after every such account, the ones whose reset is unknown.
func (m *Member) resetKey(now time.Time) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.quota.Binding(now)
	if !ok || b.Resets.IsZero() || b.Left <= 0 {
		return math.MaxFloat64
	}
	return b.Resets.Sub(now).Seconds()
}

func rotate(s []*Member, k int) {
	if k == 0 {
		return
	}
	slices.Reverse(s[:k])
	slices.Reverse(s[k:])
	slices.Reverse(s)
}

func (p *Pool) affine(session string, now time.Time) string {
	if session == "" {
		return ""
	}
	p.affMu.Lock()
	defer p.affMu.Unlock()
	e, ok := p.affinity[session]
	if !ok || now.Sub(e.used) > affinityIdle {
		return ""
	}
	return e.account
}

// Served records that m answered a request of session: its run of failures ends, and the
// session keeps the account.
func (p *Pool) Served(m *Member, session string) {
	m.succeeded()
	if session == "" {
		return
	}
	now := p.now()
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
	p.affinity[session] = affinityEntry{account: m.Key(), used: now}
}

// Fail records a transient failure of m (a timeout when timeout is set) and makes it rest when
// the breaker says so; it reports whether m now rests.
func (p *Pool) Fail(m *Member, timeout bool, reason string) bool {
	return m.fail(p.now(), timeout, reason, p.breaker)
}

// SignedIn forgets m's rests, model blocks and sign-in mark: the user signed in again.
func (p *Pool) SignedIn(m *Member) { m.endRest(true) }

// WindowsReset ends m's rests and model blocks: a banked reset emptied its windows. A sign-in
// mark stays.
func (p *Pool) WindowsReset(m *Member) { m.endRest(false) }

// SetQuota keeps m's latest usage reading.
func (p *Pool) SetQuota(m *Member, q *Quota) { m.setQuota(q) }

// BackAt is when the first account that rests (cools down) and serves a request (serves) is
// back; zero when none rests. Disabled and signed-out accounts do not come back by waiting.
func (p *Pool) BackAt(now time.Time, serves func(*Member) bool) time.Time {
	var back time.Time
	for _, m := range p.List() {
		if !serves(m) {
			continue
		}
		if t := m.RestsUntil(now); !t.IsZero() && (back.IsZero() || t.Before(back)) {
			back = t
		}
	}
	return back
}

// Dry is why no account can take a request: how many accounts would serve it, each one's state
// in words, and when the first resting one is back (zero: none rests).
type Dry struct {
	Serving int
	States  []string
	Back    time.Time
}

// Unavailable explains why no account that serves (nil: any) can take a request for model.
func (p *Pool) Unavailable(model string, now time.Time, serves func(*Member) bool) Dry {
	var d Dry
	for _, m := range p.List() {
		if serves != nil && !serves(m) {
			continue
		}
		d.Serving++
		s := m.Snapshot(now, model)
		desc := m.Name + ": " + s.State
		switch s.State {
		case StateCooldown:
			if d.Back.IsZero() || s.CooldownUntil.Before(d.Back) {
				d.Back = s.CooldownUntil
			}
			desc += " until " + s.CooldownUntil.UTC().Format(time.RFC3339)
			if s.CooldownReason == CooldownReserve {
				desc += fmt.Sprintf(" (its window has less left than the %d%% it keeps in reserve)", m.Reserve)
			}
		case StateNeedsLogin, StateKeyRejected:
			desc += " (" + s.NeedsLogin + ")"
		case StateReady:
			if !s.ModelBlockedUntil.IsZero() {
				desc += fmt.Sprintf(" (model %q not served until %s)", model, s.ModelBlockedUntil.UTC().Format(time.RFC3339))
			}
		}
		d.States = append(d.States, desc)
	}
	return d
}
