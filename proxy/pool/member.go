package pool

import (
	"fmt"
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

// Why an account cools down (State.CooldownReason).
const (
	CooldownRateLimit = "rate_limit" // the upstream said so: 429, quota, usage limit
	CooldownFailing   = "failing"    // the breaker: it timed out or failed too often in a row
	// CooldownReserve: its binding window has less left than the account's reserve; it is
	// back when that window resets.
	CooldownReserve = "reserve"
)

// Member is an account plus the runtime state the pool keeps for it. A Member is never changed
// once made: Set makes new members, so a request in flight keeps the account as it was when it
// started. The runtime state (health) is shared by the versions of one account, so it survives
// Set as long as the account keeps its key, kind and base URL.
//
// Only this package writes the state: its readers (State, Usable, Snapshot, ...) are the
// others' way in, and the pool's methods (Rest, Call, Fail, Served, ...) its writers.
type Member struct {
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
	// workspaceID is the chatgpt-account-id of the credential last used (Rest's workspace scope).
	workspaceID atomic.Pointer[string]

	mu             sync.Mutex
	cooldownUntil  time.Time
	cooldownReason string // CooldownRateLimit or CooldownFailing
	streak         int    // transient failures in a row
	rests          int    // rests in a row (each doubles the next)
	needsLogin     string // reason; "" when the credential works
	lastError      string
	modelBlocked   map[string]time.Time
	bucketRests    map[string]time.Time // a bucket (metered feature) resting on the account, until
	quota          *Quota

	pool *Pool // the pool the account is of (the models' buckets)

	// changed is raised when the state above changes (the embedder's change signal).
	changed func()
}

func (m *Member) raise() {
	if m.changed != nil {
		m.changed()
	}
}

func (m *Member) stateLocked(now time.Time) string {
	switch {
	case m.Disabled:
		return StateDisabled
	case m.needsLogin != "" && m.Kind == KindOpenAI:
		return StateKeyRejected
	case m.needsLogin != "":
		return StateNeedsLogin
	case now.Before(m.cooldownUntil), !m.reservedLocked(now).IsZero():
		return StateCooldown
	}
	return StateReady
}

// reservedLocked is when m's binding window resets while it has less left than m's reserve
// (zero: it is not held back, or its reset is unknown and it is held back anyway: then the
// far future).
func (m *Member) reservedLocked(now time.Time) time.Time {
	if m.Reserve <= 0 {
		return time.Time{}
	}
	b, ok := m.quota.Binding(now)
	if !ok || b.Left >= float64(m.Reserve) {
		return time.Time{}
	}
	if b.Resets.IsZero() {
		return now.Add(maxCooldownLength)
	}
	return b.Resets
}

// restLocked is when m, cooling down, is back, and why.
func (m *Member) restLocked(now time.Time) (time.Time, string) {
	until, why := m.cooldownUntil, m.cooldownReason
	if !now.Before(until) {
		until, why = time.Time{}, ""
	}
	if r := m.reservedLocked(now); r.After(until) {
		until, why = r, CooldownReserve
	}
	return until, why
}

// State is m's state now (StateReady, StateCooldown, ...).
func (m *Member) State(now time.Time) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stateLocked(now)
}

// Usable reports whether m may take a request for model now.
func (m *Member) Usable(model string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.stateLocked(now); st != StateReady && !m.bucketServesLocked(st, model, now) {
		return false
	}
	if until, ok := m.modelBlocked[model]; ok {
		if now.Before(until) {
			return false
		}
		delete(m.modelBlocked, model)
	}
	return m.bucketBackLocked(model, now).IsZero()
}

// bucketServesLocked reports whether model, metered by a bucket of its own on m, is served
// while m rests for its own limit: a model's bucket is a limit apart (Spark's), which the
// account's own limit does not spend. A rest of the breaker's, a sign-in to renew or the
// reserve keeps every model off the account.
func (m *Member) bucketServesLocked(st, model string, now time.Time) bool {
	return st == StateCooldown && m.cooldownReason == CooldownRateLimit && now.Before(m.cooldownUntil) &&
		m.reservedLocked(now).IsZero() && m.bucketOf(model) != ""
}

// bucketBackLocked is when the bucket that meters model on m is back, when it rests (the
// upstream said so) or its reading says it is spent; zero when it serves.
func (m *Member) bucketBackLocked(model string, now time.Time) time.Time {
	b := m.bucketOf(model)
	if b == "" {
		return time.Time{}
	}
	until := m.quota.spentBucket(b, now)
	if r := m.bucketRests[b]; now.Before(r) && r.After(until) {
		until = r
	}
	return until
}

// RestsUntil is when m, cooling down, is back; zero when it does not rest (or does not come
// back by waiting: disabled, signed out).
func (m *Member) RestsUntil(now time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stateLocked(now) != StateCooldown {
		return time.Time{}
	}
	until, _ := m.restLocked(now)
	return until
}

// BucketBack is when the bucket that meters model on m serves again (zero: it serves now).
func (m *Member) BucketBack(model string, now time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bucketBackLocked(model, now)
}

// Snapshot is what is known of an account at one moment, for stats and explanations.
type Snapshot struct {
	State          string
	CooldownUntil  time.Time // when a cooling account is back (zero unless State is StateCooldown)
	CooldownReason string
	NeedsLogin     string
	LastError      string
	Requests       int64
	Failures       int64
	Quota          *Quota // the last usage reading (shared: never changed once read)
	// ModelBlockedUntil is when the model Snapshot was asked about is served again (zero: it is).
	ModelBlockedUntil time.Time
	// BucketRests are the buckets (metered features: codex_bengalfox) resting on the account,
	// each until its window resets.
	BucketRests map[string]time.Time
}

// Snapshot reads m's state now; model, when set, fills ModelBlockedUntil.
func (m *Member) Snapshot(now time.Time, model string) Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Snapshot{State: m.stateLocked(now), NeedsLogin: m.needsLogin, LastError: m.lastError,
		Requests: m.requests.Load(), Failures: m.failures.Load(), Quota: m.quota}
	if s.State == StateCooldown {
		s.CooldownUntil, s.CooldownReason = m.restLocked(now)
	}
	if until, ok := m.modelBlocked[model]; ok && model != "" && now.Before(until) {
		s.ModelBlockedUntil = until
	}
	if until := m.bucketBackLocked(model, now); !until.IsZero() && until.After(s.ModelBlockedUntil) {
		s.ModelBlockedUntil = until
	}
	for b, until := range m.bucketRests {
		if now.Before(until) {
			if s.BucketRests == nil {
				s.BucketRests = map[string]time.Time{}
			}
			s.BucketRests[b] = until
		}
	}
	return s
}

// Quota is m's latest usage reading (nil: none yet). A reading is never changed once read: the
// pool keeps the next one in its place.
func (m *Member) Quota() *Quota {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.quota
}

// Workspace is the chatgpt-account-id of the credential m was last used with ("" before).
func (m *Member) Workspace() string {
	if p := m.workspaceID.Load(); p != nil {
		return *p
	}
	return ""
}

// CountRequest counts a client request sent to m (once, however many tries).
func (m *Member) CountRequest() { m.requests.Add(1) }

// CountFailure counts a request m could not serve.
func (m *Member) CountFailure() { m.failures.Add(1) }

// NoSocketUntil is when m's upstream may be asked for a WebSocket again (zero: now).
func (m *Member) NoSocketUntil() time.Time {
	if n := m.noSocketUntil.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// RefuseSockets notes that m's upstream refused a WebSocket: none is asked for until then.
func (m *Member) RefuseSockets(until time.Time) { m.noSocketUntil.Store(until.UnixNano()) }

// Same reports whether m and o are versions of one account (they share their state).
func (m *Member) Same(o *Member) bool { return o != nil && m.health == o.health }

// The writers, called by the pool's methods alone.

func (m *Member) sawCredential(c Credential) {
	if c.AccountID != "" && m.Workspace() != c.AccountID {
		id := c.AccountID
		m.workspaceID.Store(&id)
	}
}

func (m *Member) coolDown(until time.Time, reason string) {
	m.mu.Lock()
	if until.After(m.cooldownUntil) {
		m.cooldownUntil, m.cooldownReason = until, CooldownRateLimit
	}
	m.lastError = reason
	m.mu.Unlock()
	m.raise()
}

// fail records a transient failure of m (a timeout when timeout is set) and makes it rest when
// the breaker says so; it reports whether m now rests.
func (m *Member) fail(now time.Time, timeout bool, reason string, b Breaker) bool {
	defer m.raise()
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

func (m *Member) succeeded() {
	m.mu.Lock()
	m.streak, m.rests = 0, 0
	m.mu.Unlock()
}

func (m *Member) markNeedsLogin(reason string) {
	m.mu.Lock()
	m.needsLogin = reason
	m.lastError = reason
	m.mu.Unlock()
	m.raise()
}

// restBucket rests bucket on m until then (or later, when it rests longer already).
func (m *Member) restBucket(bucket string, until time.Time, reason string) {
	m.restIn(&m.bucketRests, bucket, until, reason)
}

// blockModel keeps model off m until then.
func (m *Member) blockModel(model string, until time.Time, reason string) {
	m.restIn(&m.modelBlocked, model, until, reason)
}

// restIn rests key of rests (a bucket, a model) on m until then, the later rest winning.
func (m *Member) restIn(rests *map[string]time.Time, key string, until time.Time, reason string) {
	m.mu.Lock()
	if *rests == nil {
		*rests = make(map[string]time.Time)
	}
	if until.After((*rests)[key]) {
		(*rests)[key] = until
	}
	m.lastError = reason
	m.mu.Unlock()
	m.raise()
}

func (m *Member) setLastError(reason string) {
	m.mu.Lock()
	m.lastError = reason
	m.mu.Unlock()
	m.raise()
}

// endRest forgets rests, model blocks and the last error; signedIn also forgets a sign-in
// mark (a new sign-in), else the mark stays (a banked reset ended the rest).
func (m *Member) endRest(signedIn bool) {
	m.mu.Lock()
	m.cooldownUntil, m.cooldownReason, m.streak, m.rests = time.Time{}, "", 0, 0
	if signedIn {
		m.needsLogin = ""
	}
	m.lastError = ""
	m.modelBlocked, m.bucketRests = nil, nil
	m.mu.Unlock()
	m.raise()
}

func (m *Member) setQuota(q *Quota) {
	m.mu.Lock()
	m.quota = q
	m.mu.Unlock()
	m.raise()
}

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

// WithDefaults is b with its unset fields at their defaults.
func (b Breaker) WithDefaults() Breaker {
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
