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

// newRequestID is a random (version 4) UUID.
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
