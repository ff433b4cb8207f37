package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
)

// Banked resets: a ChatGPT plan may hold rate-limit banked resets. The backend lists them at
// GET {chatgpt}/wham/rate-limit-reset-credits and spends one at POST .../consume with a
// {"credit_id","redeem_request_id"} body (codex-lb PR #1053). The relay reads each enabled
// ChatGPT account's credits on the quota cadence, shows their count and nearest expiry in the
// stats, and redeems one:
//
//   - by hand (RedeemCredit): the banked reset that expires first; one redemption at a time per
//     account; the redeem_request_id is kept until an answer arrives, so that a retry after a
//     timeout names the same intent and the backend spends at most one banked reset for it;
//   - by policy (SetResetCredits): with ResetCreditsAuto, a request that finds every account
//     resting, for longer than the hold covers, has one credit redeemed (the account whose
//     credit expires first, skipping one whose own window is back within 30 minutes) and is
//     served; concurrent requests share that one redemption. ResetCreditsAsk only signals
//     (CreditEvent "ask"); ResetCreditsOff never reads nor spends a credit on its own.
//
// What the upstream sends is untrusted: the credit ids never leave this file (they are not in
// the stats), and its titles and error messages are cleaned (redacted, no control characters,
// bounded) before they are stored.

// The reset-credit policies (SetResetCredits), the default first.
const (
	ResetCreditsAsk  = "ask"
	ResetCreditsOff  = "off"
	ResetCreditsAuto = "auto"
)

// ResetCreditModes lists the reset-credit policies, the default first.
var ResetCreditModes = []string{ResetCreditsAsk, ResetCreditsOff, ResetCreditsAuto}

// Errors of RedeemCredit (wrapped; match with errors.Is).
var (
	// ErrNoResetCredit: the account holds no credit.
	ErrNoResetCredit = errors.New("no banked reset available")
	// ErrNoSuchAccount: no account has that name.
	ErrNoSuchAccount = errors.New("no such account")
	// ErrNotChatGPT: an API key holds no banked resets.
	ErrNotChatGPT = errors.New("only ChatGPT sign-ins hold banked resets")
	// ErrRedeemPending: the backend's answer never arrived (a timeout, a 5xx); the intent is
	// kept, and trying again sends the same redeem_request_id.
	ErrRedeemPending = errors.New("no answer yet; trying again reuses the same request")
)

// Policy bounds.
const (
	// creditSoonBack: an account whose own window is back within this is not worth a credit.
	creditSoonBack = 30 * time.Minute
	// autoRedeemSpacing is the least time between two redemptions the auto policy starts: a
	// 429 an upstream sent just before a redemption took effect must not spend a second one.
	autoRedeemSpacing = time.Minute
	// askEvery is the least time between two "ask" signals.
	askEvery = 15 * time.Minute
	// consumeTimeout bounds one consume call (a caller's deadline may be shorter).
	consumeTimeout = 30 * time.Second
	// redeemWait bounds what a request waits for the redemption it shares.
	redeemWait = 45 * time.Second
)

// ResetCredits is what an account holds in banked resets, as last read (AccountStats).
type ResetCredits struct {
	// Available is how many credits the account can redeem.
	Available int `json:"available"`
	// NextExpiresAt is when the first of them expires (absent: none, or none expires).
	NextExpiresAt *time.Time `json:"next_expires_at,omitempty"`
	FetchedAt     time.Time  `json:"fetched_at"`
	// Title is the upstream's name for the next credit (cleaned), e.g. "Rate limit reset".
	Title string `json:"title,omitempty"`
	// Pending says that a redemption's answer never arrived: the next try reuses its id.
	Pending bool `json:"pending,omitempty"`
	// Redeeming counts the redemptions of the account under way or waiting for it.
	Redeeming int `json:"redeeming,omitempty"`
}

// ResetCreditStats are the relay-wide figures of banked resets (Snapshot).
type ResetCreditStats struct {
	// Mode is the policy in force: ResetCreditsOff, ResetCreditsAsk or ResetCreditsAuto.
	Mode string `json:"mode"`
	// Redeemed counts the credits spent since start (Auto of them by the auto policy).
	Redeemed int64 `json:"redeemed"`
	Auto     int64 `json:"auto"`
	// Asked counts the "ask" signals sent.
	Asked int64 `json:"asked"`
}

// RedeemResult is the answer to a redemption.
type RedeemResult struct {
	Account string `json:"account"`
	// Code is the upstream's word for what happened ("reset", "already_redeemed", ...).
	Code string `json:"code"`
	// WindowsReset is how many rate-limit windows the credit reset.
	WindowsReset int `json:"windows_reset"`
	// RequestID is the redeem_request_id the credit was spent under.
	RequestID string `json:"redeem_request_id"`
	// CreditExpiresAt is when the spent credit would have expired (zero: unknown or never).
	CreditExpiresAt time.Time `json:"credit_expires_at,omitzero"`
	RedeemedAt      time.Time `json:"redeemed_at"`
	// Retried says that the answer came to a retry of an earlier try whose answer was lost.
	Retried bool `json:"retried,omitempty"`
	// Auto says that the auto policy spent it, for a request that found every account resting.
	Auto bool `json:"auto,omitempty"`
	// Shared says that this redemption waited for another of the same account, which ended
	// with a credit spent: that one's answer is this one's, and nothing more was spent (two
	// clicks, or a click and the auto policy at once, are one intent).
	Shared bool `json:"shared,omitempty"`
	// Remaining is the account's credits after it, as re-read (nil when the re-read failed).
	Remaining *ResetCredits `json:"remaining,omitempty"`
	// Quota is the account's usage re-read after it (nil when the re-read failed).
	Quota *Quota `json:"quota,omitempty"`
}

// CreditEvent is what SetCreditHook's function is told.
type CreditEvent struct {
	// Kind is CreditRedeemed, CreditRedeemFailed or CreditAsk.
	Kind    string    `json:"kind"`
	Account string    `json:"account"`
	Time    time.Time `json:"time"`
	// Result is the redemption (CreditRedeemed).
	Result *RedeemResult `json:"result,omitempty"`
	// Error says why a redemption failed (CreditRedeemFailed); never a secret.
	Error string `json:"error,omitempty"`
	// Pending says that its answer never arrived: a retry reuses the same id.
	Pending bool `json:"pending,omitempty"`
	// Credits is what the account holds (CreditAsk: the credit the relay would spend).
	Credits *ResetCredits `json:"credits,omitempty"`
	// BackAt is when the pool would be back without a credit (CreditAsk).
	BackAt time.Time `json:"back_at,omitzero"`
}

// The kinds of CreditEvent.
const (
	CreditRedeemed     = "redeemed"
	CreditRedeemFailed = "redeem_failed"
	// CreditAsk: with the ask policy, a request found every account resting past the hold and
	// a credit would have served it; the embedder offers the redemption to the user.
	CreditAsk = "ask"
)

// creditPolicy is the Server's reset-credit state.
type creditPolicy struct {
	mode atomic.Pointer[string]
	hook atomic.Pointer[func(CreditEvent)]
	// intent is SetRedeemIntentHook's function (nil: none).
	intent atomic.Pointer[func(string) error]

	redeemed, auto, asked atomic.Int64

	mu       sync.Mutex
	flight   *redeemFlight // the auto redemption under way, shared by the requests waiting
	lastAuto time.Time     // when the last auto redemption started
	lastAsk  time.Time
}

// redeemFlight is one auto redemption that concurrent requests wait for together.
type redeemFlight struct {
	done chan struct{}
	ok   bool
}

// accountCredits is one account's banked resets (in its health).
type accountCredits struct {
	mu      sync.Mutex
	known   bool
	view    ResetCredits
	credits []resetCredit // the available ones, soonest expiry first
	// redeem holds one token: a redemption of this account holds it from start to answer.
	redeem chan struct{}
	// pending is the intent whose answer never arrived (a timeout, a 5xx): kept until one does.
	pending *pendingRedeem
	// done counts the redemptions that spent a credit, last is the latest one's result, and
	// redeeming counts those under way or waiting.
	done      uint64
	last      RedeemResult
	redeeming int
}

type pendingRedeem struct {
	creditID, requestID string
	expiresAt           time.Time
}

type resetCredit struct {
	id, status, title string
	expiresAt         time.Time
}

// SetResetCredits sets the reset-credit policy: ResetCreditsOff, ResetCreditsAsk ("" too, the
// default) or ResetCreditsAuto.
func (s *Server) SetResetCredits(mode string) error {
	if mode == "" {
		mode = ResetCreditsAsk
	}
	if !slices.Contains(ResetCreditModes, mode) {
		return fmt.Errorf("reset-credits %q: use %s", mode, strings.Join(ResetCreditModes, ", "))
	}
	prev := s.ResetCreditsMode()
	s.credits.mode.Store(&mode)
	if prev == ResetCreditsOff && mode != ResetCreditsOff {
		for _, m := range s.pool.list() {
			s.refreshCreditsSoon(m)
		}
	}
	return nil
}

// ResetCreditsMode is the reset-credit policy in force.
func (s *Server) ResetCreditsMode() string {
	if p := s.credits.mode.Load(); p != nil {
		return *p
	}
	return ResetCreditsAsk
}

// SetCreditHook has f told of every redemption and "ask" signal (nil: none). f runs on the
// goroutine that redeemed (a request's, for the auto policy): it must not block.
func (s *Server) SetCreditHook(f func(CreditEvent)) {
	if f == nil {
		s.credits.hook.Store(nil)
		return
	}
	s.credits.hook.Store(&f)
}

// SetRedeemIntentHook has f called with an account's name once a new redemption's intent (the
// credit and the redeem_request_id, PendingRedeem) is chosen and before its consume is sent
// (nil: none). An embedder that keeps intents across restarts writes it down there, so that a
// process killed while the consume is on the wire leaves it for the next one, which then sends
// the same redeem_request_id. An error from f ends the redemption before anything is spent.
func (s *Server) SetRedeemIntentHook(f func(account string) error) {
	if f == nil {
		s.credits.intent.Store(nil)
		return
	}
	s.credits.intent.Store(&f)
}

func (s *Server) creditEvent(e CreditEvent) {
	if e.Time.IsZero() {
		e.Time = s.now()
	}
	if f := s.credits.hook.Load(); f != nil {
		(*f)(e)
	}
}

func (s *Server) creditStats() ResetCreditStats {
	return ResetCreditStats{Mode: s.ResetCreditsMode(), Redeemed: s.credits.redeemed.Load(),
		Auto: s.credits.auto.Load(), Asked: s.credits.asked.Load()}
}

// resetCredits is m's credits for the stats (nil when unknown or the policy is off).
func (s *Server) resetCredits(m *member) *ResetCredits {
	if m.Kind != KindChatGPT || s.ResetCreditsMode() == ResetCreditsOff {
		return nil
	}
	c := &m.credits
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known {
		return nil
	}
	v := c.view
	v.Pending, v.Redeeming = c.pending != nil, c.redeeming
	return &v
}

// resetCreditsURL is the reset-credit list for a Codex backend base URL, like usageURL:
// https://chatgpt.com/backend-api/codex -> https://chatgpt.com/backend-api/wham/rate-limit-reset-credits.
func resetCreditsURL(base string) string {
	return strings.TrimSuffix(strings.TrimRight(base, "/"), "/codex") + "/wham/rate-limit-reset-credits"
}

// refreshCredits reads m's credits when the policy reads them; a failed read keeps the last.
func (s *Server) refreshCredits(ctx context.Context, m *member) {
	if m.Kind != KindChatGPT || m.Disabled || s.ResetCreditsMode() == ResetCreditsOff {
		return
	}
	if _, err := s.fetchCredits(ctx, m); err != nil {
		s.log.Debug("banked resets read failed", "account", m.Name, "error", err)
	}
}

// refreshCreditsSoon reads m's credits in the background while the relay serves.
func (s *Server) refreshCreditsSoon(m *member) {
	if m.Kind != KindChatGPT || m.Disabled || s.serving.Load() == 0 || s.ResetCreditsMode() == ResetCreditsOff {
		return
	}
	go s.refreshCredits(context.Background(), m)
}

// fetchCredits reads m's credits and keeps them; it returns the available ones, soonest first.
func (s *Server) fetchCredits(ctx context.Context, m *member) ([]resetCredit, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	status, body, cred, err := s.creditCall(ctx, m, http.MethodGet, resetCreditsURL(m.BaseURL), nil)
	if err != nil {
		return nil, fmt.Errorf("banked resets: %s", describeTransportError(err, cred.Token))
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("banked resets: HTTP %d%s", status, upstreamSays(body, cred.Token))
	}
	now := s.now()
	list, count, err := parseCredits(body, now)
	if err != nil {
		return nil, err
	}
	view := ResetCredits{Available: count, FetchedAt: now}
	if len(list) > 0 {
		view.Title = list[0].title
		if !list[0].expiresAt.IsZero() {
			t := list[0].expiresAt
			view.NextExpiresAt = &t
		}
	}
	c := &m.credits
	c.mu.Lock()
	c.known, c.view, c.credits = true, view, list
	c.mu.Unlock()
	return list, nil
}

// parseCredits reads the list answer: the credits still available (by status, and not expired
// by now), soonest expiry first (one that never expires last), and the count available.
func parseCredits(body []byte, now time.Time) ([]resetCredit, int, error) {
	var v struct {
		Credits []struct {
			ID        string   `json:"id"`
			Status    string   `json:"status"`
			Title     string   `json:"title"`
			ExpiresAt flexTime `json:"expires_at"`
		} `json:"credits"`
		AvailableCount *int `json:"available_count"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, 0, fmt.Errorf("banked resets: the answer is not the credit list: %v", err)
	}
	var list []resetCredit
	for _, c := range v.Credits {
		if c.ID == "" || !strings.EqualFold(c.Status, "available") && c.Status != "" {
			continue
		}
		if t := time.Time(c.ExpiresAt); !t.IsZero() && !t.After(now) {
			continue
		}
		list = append(list, resetCredit{id: c.ID, status: c.Status, title: cleanText(c.Title, 80), expiresAt: time.Time(c.ExpiresAt)})
	}
	slices.SortStableFunc(list, func(a, b resetCredit) int { return compareExpiry(a.expiresAt, b.expiresAt) })
	count := len(list)
	if v.AvailableCount != nil && *v.AvailableCount >= 0 && len(v.Credits) == 0 {
		// A count without the list: the backend's word (nothing to redeem by id, though).
		count = *v.AvailableCount
	}
	return list, count, nil
}

// compareExpiry orders expiry times soonest first, a zero time (never expires) last.
func compareExpiry(a, b time.Time) int {
	switch {
	case a.Equal(b):
		return 0
	case a.IsZero():
		return 1
	case b.IsZero():
		return -1
	}
	return a.Compare(b)
}

// flexTime reads a timestamp sent as an RFC 3339 string, as epoch seconds or milliseconds
// (number or numeric string), or null.
type flexTime time.Time

func (t *flexTime) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" || s == `""` {
		*t = flexTime{}
		return nil
	}
	if unq, err := strconv.Unquote(s); err == nil {
		s = unq
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00"} {
			if v, err := time.Parse(layout, s); err == nil {
				*t = flexTime(v)
				return nil
			}
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("a timestamp that is neither RFC 3339 nor a number") // the upstream's text is not repeated
	}
	if f > 1e12 { // milliseconds
		f /= 1000
	}
	sec := int64(f)
	*t = flexTime(time.Unix(sec, int64((f-float64(sec))*1e9)).UTC())
	return nil
}

// RedeemCredit spends one of the named account's banked resets: the one that expires first.
// One redemption runs at a time per account (a second waits for the first). When a try got no
// answer (a timeout, a 5xx), the next one sends the same credit and redeem_request_id, so the
// backend spends at most one banked reset for one intent. A success clears the account's cooldown
// (it serves again), re-reads its usage and credits at once, and is told to the credit hook.
// A manual redemption is allowed whatever the policy: the policy only says what the relay does
// on its own.
func (s *Server) RedeemCredit(ctx context.Context, account string) (RedeemResult, error) {
	m := s.memberNamed(account)
	if m == nil {
		return RedeemResult{}, fmt.Errorf("%w: %q", ErrNoSuchAccount, account)
	}
	if m.Kind != KindChatGPT {
		return RedeemResult{}, fmt.Errorf("account %q is an API key: %w", account, ErrNotChatGPT)
	}
	return s.redeem(ctx, m, false)
}

func (s *Server) redeem(ctx context.Context, m *member, auto bool) (RedeemResult, error) {
	res, pending, err := s.redeemOnce(ctx, m, auto)
	if err == nil && res.Shared {
		s.log.Info("banked reset redemption shared the one that ended while it waited", "account", m.Name, "auto", auto)
		return res, nil
	}
	if err != nil {
		s.log.Warn("banked reset not redeemed", "account", m.Name, "error", err, "pending", pending)
		if !errors.Is(err, ErrNoResetCredit) {
			s.creditEvent(CreditEvent{Kind: CreditRedeemFailed, Account: m.Name, Error: err.Error(), Pending: pending})
		}
		return res, err
	}
	s.credits.redeemed.Add(1)
	if auto {
		s.credits.auto.Add(1)
	}
	s.log.Info("banked reset redeemed", "account", m.Name, "code", res.Code, "windows_reset", res.WindowsReset, "auto", auto)
	s.creditEvent(CreditEvent{Kind: CreditRedeemed, Account: m.Name, Result: &res, Time: res.RedeemedAt})
	return res, nil
}

// redeemOnce is one redemption under the account's lock; pending reports that its answer never
// arrived (the intent is kept for the next try).
func (s *Server) redeemOnce(ctx context.Context, m *member, auto bool) (res RedeemResult, pending bool, err error) {
	res = RedeemResult{Account: m.Name, Auto: auto}
	c := &m.credits
	c.mu.Lock()
	if c.redeem == nil {
		c.redeem = make(chan struct{}, 1)
	}
	sem := c.redeem
	seen := c.done
	c.redeeming++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.redeeming--
		c.mu.Unlock()
	}()
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return res, false, fmt.Errorf("waiting for the redemption under way: %w", ctx.Err())
	}
	defer func() { <-sem }()

	c.mu.Lock()
	intent := c.pending
	if intent == nil && c.done != seen {
		// A redemption of this account spent a credit while this one waited: the account was
		// reset for both; spending another would be two banked resets for one intent.
		shared := c.last
		c.mu.Unlock()
		shared.Shared, shared.Auto, shared.Retried = true, auto, false
		return shared, false, nil
	}
	c.mu.Unlock()
	if intent == nil {
		// The list just read is the authority: a credit the cache still shows may be gone.
		list, err := s.fetchCredits(ctx, m)
		if err != nil {
			return res, false, err
		}
		if len(list) == 0 {
			return res, false, fmt.Errorf("%s: %w", m.Name, ErrNoResetCredit)
		}
		intent = &pendingRedeem{creditID: list[0].id, requestID: newRequestID(), expiresAt: list[0].expiresAt}
		c.mu.Lock()
		c.pending = intent
		c.mu.Unlock()
		// Kept before the consume leaves: after it, a crash may have spent the credit.
		if f := s.credits.intent.Load(); f != nil {
			if err := (*f)(m.Name); err != nil {
				c.mu.Lock()
				if c.pending == intent {
					c.pending = nil
				}
				c.mu.Unlock()
				return res, false, fmt.Errorf("redeeming a banked reset of %s: the intent could not be kept, so nothing was spent: %w", m.Name, err)
			}
		}
	} else {
		res.Retried = true
	}
	res.RequestID, res.CreditExpiresAt = intent.requestID, intent.expiresAt

	body, _ := json.Marshal(map[string]string{"credit_id": intent.creditID, "redeem_request_id": intent.requestID})
	cctx, cancel := context.WithTimeout(ctx, consumeTimeout)
	defer cancel()
	status, answer, cred, err := s.creditCall(cctx, m, http.MethodPost, resetCreditsURL(m.BaseURL)+"/consume", body)
	if err != nil {
		return res, true, fmt.Errorf("redeeming a banked reset of %s: %s: %w", m.Name, describeTransportError(err, cred.Token), ErrRedeemPending)
	}
	if status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests {
		return res, true, fmt.Errorf("redeeming a banked reset of %s: HTTP %d%s: %w", m.Name, status, upstreamSays(answer, cred.Token), ErrRedeemPending)
	}
	// An answer arrived: the intent is settled, whatever it says.
	c.mu.Lock()
	if c.pending == intent {
		c.pending = nil
	}
	c.mu.Unlock()
	if status/100 != 2 {
		if status == http.StatusUnauthorized {
			m.markNeedsLogin("the ChatGPT sign-in was refused while redeeming a banked reset: sign in again")
		}
		s.refreshCredits(ctx, m)
		return res, false, fmt.Errorf("redeeming a banked reset of %s: HTTP %d%s", m.Name, status, upstreamSays(answer, cred.Token))
	}
	var v struct {
		Code   string `json:"code"`
		Credit struct {
			RedeemedAt flexTime `json:"redeemed_at"`
		} `json:"credit"`
		WindowsReset int `json:"windows_reset"`
	}
	json.Unmarshal(answer, &v) // a 2xx is a redemption even when its body is odd
	res.Code, res.WindowsReset = cleanText(v.Code, 40), v.WindowsReset
	res.RedeemedAt = time.Time(v.Credit.RedeemedAt)
	if res.RedeemedAt.IsZero() {
		res.RedeemedAt = s.now()
	}
	m.creditReset()
	// Read back at once what the credit changed: the windows and the credits left.
	s.refreshQuota(context.WithoutCancel(ctx), m)
	if _, err := s.fetchCredits(context.WithoutCancel(ctx), m); err == nil {
		res.Remaining = s.resetCreditsOf(m)
	}
	m.mu.Lock()
	res.Quota = m.quota
	m.mu.Unlock()
	c.mu.Lock()
	c.done++
	c.last = res
	c.mu.Unlock()
	return res, false, nil
}

func (s *Server) resetCreditsOf(m *member) *ResetCredits {
	c := &m.credits
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.view
	return &v
}

// creditReset ends m's rest after a credit reset its windows: it serves again at once.
func (m *member) creditReset() {
	m.mu.Lock()
	m.cooldownUntil, m.cooldownReason, m.streak, m.rests = time.Time{}, "", 0, 0
	m.lastError = ""
	m.modelBlocked = nil
	m.mu.Unlock()
}

// creditCall sends one reset-credit request for m (body: JSON, nil for none). A 401 is tried
// once more with a renewed credential when the account's credentials can renew.
func (s *Server) creditCall(ctx context.Context, m *member, method, url string, body []byte) (int, []byte, Credential, error) {
	cred, err := m.Credentials.Credential(ctx)
	if err != nil {
		return 0, nil, cred, err
	}
	for try := 0; ; try++ {
		req, err := s.upstreamRequest(ctx, m, cred, method, url, "application/json")
		if err != nil {
			return 0, nil, cred, err
		}
		if body != nil {
			req.Body = io.NopCloser(bytes.NewReader(body))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			req.ContentLength = int64(len(body))
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := s.client.Do(req)
		if err != nil {
			return 0, nil, cred, err
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return 0, nil, cred, err
		}
		if resp.StatusCode == http.StatusUnauthorized && try == 0 {
			if r, ok := m.Credentials.(Refresher); ok {
				if next, rerr := r.Refresh(ctx, cred); rerr == nil {
					cred = next
					continue
				}
			}
		}
		return resp.StatusCode, b, cred, nil
	}
}

// upstreamSays is the cleaned message of an upstream's error answer, as ": message" ("" when
// it says nothing usable).
func upstreamSays(body []byte, secrets ...string) string {
	if len(bytes.TrimSpace(body)) == 0 {
		return ""
	}
	_, msg, _ := parseUpstreamError(body)
	if msg = cleanText(redactString(msg, secrets...), 200); msg == "" {
		return ""
	}
	return ": " + msg
}

// cleanText makes upstream text safe to store and show: secrets masked, no control or
// invisible formatting characters, at most n bytes (on a rune boundary).
func cleanText(s string, n int) string {
	s = redactString(s)
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > n {
		i := n
		for i > 0 && !utf8RuneStart(s[i]) {
			i--
		}
		s = s[:i]
	}
	return s
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// newRequestID is a random (version 4) UUID.
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// redeemForPool is the policy's turn when a request finds every account that serves it resting
// longer than the hold covers (back: when the first is back). With ResetCreditsAuto it redeems
// one credit, shared with the concurrent requests in the same plight, and reports whether the
// request is to be dispatched again; with ResetCreditsAsk it signals, at most every askEvery.
func (x *exchange) redeemForPool(p *plan, back time.Time) bool {
	s := x.s
	mode := s.ResetCreditsMode()
	if mode == ResetCreditsOff || x.wait.redeemed {
		return false
	}
	cp := &s.credits
	cp.mu.Lock()
	if f := cp.flight; f != nil {
		cp.mu.Unlock()
		return x.waitRedeem(f)
	}
	now := s.now() // after any wait for the lock: what a redemption that just ended changed
	if p.anyUsable(&s.pool, now) {
		cp.mu.Unlock()
		return true // a redemption that just ended made an account usable
	}
	m, credits := x.creditCandidate(p, now)
	if m == nil {
		cp.mu.Unlock()
		return false
	}
	if mode == ResetCreditsAsk {
		ask := cp.lastAsk.IsZero() || now.Sub(cp.lastAsk) >= askEvery
		if ask {
			cp.lastAsk = now
		}
		cp.mu.Unlock()
		if ask {
			s.credits.asked.Add(1)
			s.log.Info("every account rests: a banked reset would serve", "account", m.Name, "back_at", back)
			s.creditEvent(CreditEvent{Kind: CreditAsk, Account: m.Name, Credits: credits, BackAt: back})
		}
		return false
	}
	if !cp.lastAuto.IsZero() && now.Sub(cp.lastAuto) < autoRedeemSpacing {
		cp.mu.Unlock()
		return false
	}
	f := &redeemFlight{done: make(chan struct{})}
	cp.flight, cp.lastAuto = f, now
	cp.mu.Unlock()
	x.wait.redeemed = true
	s.log.Info("every account rests: redeeming a banked reset", "id", x.t.ID, "account", m.Name)
	// The redemption is the pool's, not this request's: a client that leaves does not cut it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.r.Context()), redeemWait)
	_, err := s.redeem(ctx, m, true)
	cancel()
	f.ok = err == nil
	cp.mu.Lock()
	cp.flight = nil
	cp.mu.Unlock()
	close(f.done)
	return f.ok
}

// waitRedeem waits for the redemption another request started; true when it succeeded.
func (x *exchange) waitRedeem(f *redeemFlight) bool {
	x.wait.redeemed = true
	select {
	case <-f.done:
		return f.ok
	case <-x.r.Context().Done():
		return false
	}
}

// creditCandidate is the account whose credit the policy would spend for this request: an
// enabled ChatGPT account that serves one of its targets, rests, holds a credit, and is not
// back within creditSoonBack anyway; of those, the one whose credit expires first.
func (x *exchange) creditCandidate(p *plan, now time.Time) (*member, *ResetCredits) {
	var best *member
	var bestCredits *ResetCredits
	var bestExp time.Time
	for _, m := range x.s.pool.list() {
		if m.Kind != KindChatGPT || m.Disabled || !p.servesAny(m) {
			continue
		}
		m.mu.Lock()
		st, until, why := m.stateLocked(now), m.cooldownUntil, m.cooldownReason
		m.mu.Unlock()
		// A credit resets rate-limit windows: it does nothing for an upstream that fails.
		if st != StateCooldown || why != CooldownRateLimit || until.Sub(now) <= creditSoonBack {
			continue
		}
		if t := m.quotaReset(now); !t.IsZero() && t.Sub(now) <= creditSoonBack {
			continue // its window resets soon: the rest is a stale reading
		}
		c := &m.credits
		c.mu.Lock()
		has := c.pending != nil || len(c.credits) > 0
		var exp time.Time
		if c.pending != nil {
			exp = c.pending.expiresAt
		} else if has {
			exp = c.credits[0].expiresAt
		}
		view := c.view
		c.mu.Unlock()
		if !has {
			continue
		}
		if best == nil || compareExpiry(exp, bestExp) < 0 {
			best, bestExp, bestCredits = m, exp, &view
		}
	}
	return best, bestCredits
}

// handleRedeemCredit serves POST /relay/accounts/{name}/redeem-credit: RedeemCredit for the
// command line and the windows of another process. The answer is the RedeemResult, or an
// OpenAI-shaped error: 404 account_not_found, 400 not_chatgpt, 409 no_reset_credit, 504
// redeem_pending (no answer from the backend: trying again reuses the request), 502
// redeem_failed.
//
// It spends money: with the local key off it still needs a request signed with the instance
// secret (the command line's), so that no other local user can spend a banked reset.
func (s *Server) handleRedeemCredit(w http.ResponseWriter, r *http.Request) {
	if s.keyHash.Load() == nil && !instanceSigned(r) {
		writeError(w, &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "invalid_api_key",
			Message: "spending a banked reset needs the relay's local key (or `codexrelay accounts redeem`, which signs its request)"})
		return
	}
	res, err := s.RedeemCredit(r.Context(), r.PathValue("name"))
	if err == nil {
		writeJSON(w, http.StatusOK, res)
		return
	}
	e := &apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "redeem_failed", Message: err.Error()}
	switch {
	case errors.Is(err, ErrNoSuchAccount):
		e.Status, e.Type, e.Code = http.StatusNotFound, "invalid_request_error", "account_not_found"
	case errors.Is(err, ErrNotChatGPT):
		e.Status, e.Type, e.Code = http.StatusBadRequest, "invalid_request_error", "not_chatgpt"
	case errors.Is(err, ErrNoResetCredit):
		e.Status, e.Type, e.Code = http.StatusConflict, "invalid_request_error", "no_reset_credit"
	case errors.Is(err, ErrRedeemPending):
		e.Status, e.Code = http.StatusGatewayTimeout, "redeem_pending"
	}
	writeError(w, e)
}

// A PendingRedeem is a redemption whose answer never arrived: the credit it named and the
// redeem_request_id the next try must send again. An embedder keeps it across restarts
// (PendingRedeem after a CreditRedeemFailed event with Pending, SetPendingRedeem at start), so
// that one intent never spends two banked resets even when the process that tried is gone.
type PendingRedeem struct {
	CreditID  string    `json:"credit_id"`
	RequestID string    `json:"redeem_request_id"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// PendingRedeem returns the named account's redemption whose answer never arrived, if any.
func (s *Server) PendingRedeem(account string) (PendingRedeem, bool) {
	m := s.memberNamed(account)
	if m == nil {
		return PendingRedeem{}, false
	}
	c := &m.credits
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		return PendingRedeem{}, false
	}
	return PendingRedeem{CreditID: c.pending.creditID, RequestID: c.pending.requestID, ExpiresAt: c.pending.expiresAt}, true
}

// SetPendingRedeem makes p the named account's redemption to try again (kept by an earlier
// process); an account that already holds one keeps its own.
func (s *Server) SetPendingRedeem(account string, p PendingRedeem) {
	m := s.memberNamed(account)
	if m == nil || p.CreditID == "" || p.RequestID == "" {
		return
	}
	c := &m.credits
	c.mu.Lock()
	if c.pending == nil {
		c.pending = &pendingRedeem{creditID: p.CreditID, requestID: p.RequestID, expiresAt: p.ExpiresAt}
	}
	c.mu.Unlock()
}

// memberNamed is the account called name, or nil.
func (s *Server) memberNamed(name string) *member {
	for _, m := range s.pool.list() {
		if m.Name == name {
			return m
		}
	}
	return nil
}
