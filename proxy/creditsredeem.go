package proxy

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// One redemption of a banked reset: by hand (RedeemCredit) or for the auto policy
// (creditsrequest.go). One runs at a time per account; its intent (the credit and the
// redeem_request_id) is kept until an answer arrives, so that one intent never spends two.
// Requests that come while one is under way, or within redeemJoinWindow after it spent a
// credit, join it (RedeemResult.Shared): the windows it reset are fresh, and ten clicks or
// ten scripts at once (issue 49: they spent 3 of 3) are one intent.

// redeemJoinWindow is how long after a redemption spent a credit a new request for the same
// account shares it rather than spending another.
const redeemJoinWindow = 30 * time.Second

// RedeemCredit spends one of the named account's banked resets: the one that expires first.
// One redemption runs at a time per account (a second waits for the first). When a try got no
// answer (a timeout, a 5xx), the next one sends the same credit and redeem_request_id, so the
// backend spends at most one banked reset for one intent. A success clears the account's cooldown
// (it serves again), re-reads its usage and credits at once, and is told to the credit hook.
// A manual redemption is allowed whatever the policy: the policy only says what the relay does
// on its own.
func (s *Server) RedeemCredit(ctx context.Context, account string) (RedeemResult, error) {
	defer s.changes.Raise()
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
	c := s.creditsOf(m)
	seen, leave, err := c.enter(ctx)
	if err != nil {
		return res, false, err
	}
	defer leave()
	c.mu.Lock()
	intent, last := c.pending, c.last
	spent := c.done != seen || (c.done > 0 && s.now().Sub(c.lastAt) < redeemJoinWindow)
	c.mu.Unlock()
	if intent == nil && spent {
		// A redemption of this account spent a credit while this one waited, or just before it
		// came: the account was reset for both; spending another would be two banked resets
		// for one intent.
		last.Shared, last.Auto, last.Retried = true, auto, false
		return last, false, nil
	}
	if intent != nil {
		res.Retried = true
	} else if intent, err = s.newIntent(ctx, m); err != nil {
		return res, false, err
	}
	res.RequestID, res.CreditExpiresAt = intent.requestID, intent.expiresAt
	answer, pending, err := s.consume(ctx, m, intent)
	if err != nil {
		return res, pending, err
	}
	s.settle(ctx, m, &res, answer)
	return res, false, nil
}

// enter takes the account's redemption token, waiting for the redemption under way: seen is
// how many of the account's redemptions had spent a credit when it began to wait, and leave
// gives the token back.
func (c *accountCredits) enter(ctx context.Context) (seen uint64, leave func(), err error) {
	c.mu.Lock()
	if c.redeem == nil {
		c.redeem = make(chan struct{}, 1)
	}
	sem := c.redeem
	seen = c.done
	c.redeeming++
	c.mu.Unlock()
	left := func() {
		c.mu.Lock()
		c.redeeming--
		c.mu.Unlock()
	}
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		left()
		return 0, nil, fmt.Errorf("waiting for the redemption under way: %w", ctx.Err())
	}
	return seen, func() { <-sem; left() }, nil
}

// newIntent chooses a new redemption's intent: the credit that expires first, as the list just
// read says, and a new redeem_request_id. It is kept, and told to the intent hook, before
// anything is sent: after the consume leaves, a crash may have spent the credit.
func (s *Server) newIntent(ctx context.Context, m *member) (*pendingRedeem, error) {
	// The list just read is the authority: a credit the cache still shows may be gone.
	list, err := s.fetchCredits(ctx, m)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s: %w", m.Name, ErrNoResetCredit)
	}
	intent := &pendingRedeem{creditID: list[0].id, requestID: newRequestID(), expiresAt: list[0].expiresAt}
	c := s.creditsOf(m)
	c.mu.Lock()
	c.pending = intent
	c.mu.Unlock()
	if f := s.credits.intent.Load(); f != nil {
		if err := (*f)(m.Name); err != nil {
			c.settled(intent)
			return nil, fmt.Errorf("redeeming a banked reset of %s: the intent could not be kept, so nothing was spent: %w", m.Name, err)
		}
	}
	return intent, nil
}

// settled forgets intent, unless another took its place.
func (c *accountCredits) settled(intent *pendingRedeem) {
	c.mu.Lock()
	if c.pending == intent {
		c.pending = nil
	}
	c.mu.Unlock()
}

// consume sends the intent's consume call and returns the backend's answer when it spent the
// credit. No answer (a transport error, a 5xx, 408, 429) is pending: the intent is kept, and
// the next try sends it again. Any other answer settles the intent.
func (s *Server) consume(ctx context.Context, m *member, intent *pendingRedeem) (answer []byte, pending bool, err error) {
	body, _ := json.Marshal(map[string]string{"credit_id": intent.creditID, "redeem_request_id": intent.requestID})
	cctx, cancel := context.WithTimeout(ctx, consumeTimeout)
	defer cancel()
	status, answer, cred, err := s.creditCall(cctx, m, http.MethodPost, resetCreditsURL(m.BaseURL)+"/consume", body)
	if err != nil {
		return nil, true, fmt.Errorf("redeeming a banked reset of %s: %s: %w", m.Name, describeTransportError(err, cred.Token), ErrRedeemPending)
	}
	if status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests {
		return nil, true, fmt.Errorf("redeeming a banked reset of %s: HTTP %d%s: %w", m.Name, status, upstreamSays(answer, cred.Token), ErrRedeemPending)
	}
	// An answer arrived: the intent is settled, whatever it says.
	s.creditsOf(m).settled(intent)
	if status/100 != 2 {
		// A sign-in the backend still refused after its renewal is marked by the pool (pool.Call).
		s.refreshCredits(ctx, m)
		return nil, false, fmt.Errorf("redeeming a banked reset of %s: HTTP %d%s", m.Name, status, upstreamSays(answer, cred.Token))
	}
	return answer, false, nil
}

// settle completes res from the backend's answer to a redemption that spent a credit, ends the
// account's rest, and reads back at once what the credit changed: the windows and the credits
// left.
func (s *Server) settle(ctx context.Context, m *member, res *RedeemResult, answer []byte) {
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
	s.pool.WindowsReset(m)
	s.refreshQuota(context.WithoutCancel(ctx), m)
	if _, err := s.fetchCredits(context.WithoutCancel(ctx), m); err == nil {
		res.Remaining = s.resetCreditsOf(m)
	}
	res.Quota = m.Quota()
	c := s.creditsOf(m)
	c.mu.Lock()
	c.done++
	c.last, c.lastAt = *res, s.now()
	c.mu.Unlock()
}

// resetCreditsOf is m's credits as last read.
func (s *Server) resetCreditsOf(m *member) *ResetCredits {
	c := s.creditsOf(m)
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.view
	return &v
}

// newRequestID is a random (version 4) UUID.
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
