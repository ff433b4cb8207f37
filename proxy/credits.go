package proxy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
// What the upstream sends is untrusted: the credit ids never leave the credits files (they are
// not in the stats), and its titles and error messages are cleaned (redacted, no control
// characters, bounded) before they are stored.
//
// This file holds what an embedder sees (the types, the policy and its hooks, the intents kept
// across restarts) and the HTTP handler; creditsclient.go the backend client, creditsredeem.go
// one redemption, creditsrequest.go the request path's side.

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

	// accounts is each ChatGPT account's banked resets (*accountCredits), by account key: an
	// account whose runtime state the pool made anew (SetAccounts) starts with none known.
	accounts sync.Map
}

// creditsOf is m's banked resets.
func (s *Server) creditsOf(m *member) *accountCredits {
	if c, ok := s.credits.accounts.Load(m.Key()); ok {
		return c.(*accountCredits)
	}
	c, _ := s.credits.accounts.LoadOrStore(m.Key(), &accountCredits{})
	return c.(*accountCredits)
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
	// lastAt is when the latest one ended, by the relay's clock (redeemJoinWindow).
	lastAt time.Time
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
		for _, m := range s.pool.List() {
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
	c := s.creditsOf(m)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known {
		return nil
	}
	v := c.view
	v.Pending, v.Redeeming = c.pending != nil, c.redeeming
	return &v
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
	c := s.creditsOf(m)
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
	c := s.creditsOf(m)
	c.mu.Lock()
	if c.pending == nil {
		c.pending = &pendingRedeem{creditID: p.CreditID, requestID: p.RequestID, expiresAt: p.ExpiresAt}
	}
	c.mu.Unlock()
}

// memberNamed is the account called name, or nil.
func (s *Server) memberNamed(name string) *member { return s.pool.Named(name) }
