package proxy

import (
	"context"
	"time"
)

// The request path's side of banked resets: a request that finds every account that serves it
// resting, for longer than the hold covers (hold.go), is the policy's to serve: the auto policy
// redeems one credit for it and the requests in the same plight, the ask policy signals.

// redeemForPool is the policy's turn when a request finds every account that serves it resting
// longer than the hold covers (back: when the first is back). With ResetCreditsAuto it redeems
// one credit, shared with the concurrent requests in the same plight, and reports whether the
// request is to be dispatched again; with ResetCreditsAsk it signals, at most every askEvery.
func (x *exchange) redeemForPool(p *plan, back time.Time) bool {
	s := x.s
	mode := s.ResetCreditsMode()
	if mode == ResetCreditsOff || x.times.wait.redeemed {
		return false
	}
	cp := &s.credits
	cp.mu.Lock()
	if f := cp.flight; f != nil {
		cp.mu.Unlock()
		return x.waitRedeem(f)
	}
	now := s.now() // after any wait for the lock: what a redemption that just ended changed
	if p.anyUsable(s.pool, now) {
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
	x.times.wait.redeemed = true
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
	x.times.wait.redeemed = true
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
	for _, m := range x.s.pool.List() {
		if m.Kind != KindChatGPT || m.Disabled || !p.servesAny(m) {
			continue
		}
		snap := m.Snapshot(now, "")
		// A credit resets rate-limit windows: it does nothing for an upstream that fails.
		if snap.State != StateCooldown || snap.CooldownReason != CooldownRateLimit || snap.CooldownUntil.Sub(now) <= creditSoonBack {
			continue
		}
		if t := m.QuotaReset(now); !t.IsZero() && t.Sub(now) <= creditSoonBack {
			continue // its window resets soon: the rest is a stale reading
		}
		c := x.s.creditsOf(m)
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
