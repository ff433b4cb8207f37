package proxy

import (
	"time"

	"github.com/codexrelay/codexrelay/proxy/internal/stat"
)

// Hold: when every account that serves a request rests (a rate limit, a used-up window) and
// the earliest is back within the hold bound, the request waits, with nothing sent to the
// client, and is then served. The Codex CLI does not retry a 429 usage_limit_reached: without
// the hold, a pool that is back in a few seconds would end the user's turn for nothing. Past
// the bound the client gets the 429 with resets_at, as before.

// DefaultHold is the longest a request waits for a resting pool by default.
const DefaultHold = 30 * time.Second

// maxHolding bounds the requests waiting for a resting pool at once; past it a request gets
// the 429 at once.
const maxHolding = 256

// SetHold changes the longest wait for a resting pool (0: DefaultHold; negative: never wait).
func (s *Server) SetHold(d time.Duration) {
	if d == 0 {
		d = DefaultHold
	}
	s.hold.Store(int64(d))
}

// poolWait is how a request waited for a resting pool: how long (held), and whether a reset
// credit was redeemed, or its redemption waited for, for it (redeemed: creditsrequest.go).
type poolWait struct {
	held     time.Duration
	redeemed bool
}

// Held counts the requests waiting for a resting pool now.
func (s *Server) Held() int64 { return s.holding.Load() }

// holdForPool waits for the first resting account that serves one of the request's targets to
// come back, when that is within what is left of the hold bound. It reports whether it waited
// (the request is then to be dispatched again); false when an account is usable (the failures
// were the upstreams'), none rests, the wait is too long, too many requests wait already, or
// the client left. A wait longer than the bound goes to the reset-credit policy, which may
// redeem a credit and have the request dispatched again (true).
func (x *exchange) holdForPool(p *plan) bool {
	s := x.s
	bound := time.Duration(s.hold.Load())
	if x.r.Context().Err() != nil {
		return false
	}
	now := s.now()
	var back time.Time
	for i := range p.targets {
		tg := &p.targets[i]
		if p.usable(s.pool, tg, now) {
			return false
		}
		t := s.pool.BackAt(now, func(m *member) bool { return p.serves(m, tg) })
		if !t.IsZero() && (back.IsZero() || t.Before(back)) {
			back = t
		}
	}
	if back.IsZero() {
		return false
	}
	wait := back.Sub(now)
	if bound <= 0 || x.times.wait.held+wait > bound {
		// Longer than the hold covers: the reset-credit policy's turn (creditsrequest.go).
		return x.redeemForPool(p, back)
	}
	return x.holdUntil(back)
}

// holdCovers reports whether back, when an account is back, is within what is left of the hold
// bound.
func (x *exchange) holdCovers(back time.Time) bool {
	bound := time.Duration(x.s.hold.Load())
	return !back.IsZero() && bound > 0 && x.times.wait.held+back.Sub(x.s.now()) <= bound
}

// holdUntil waits, with nothing sent to the client, until back (and holdSlack) has passed. It
// reports false when too many requests wait already or the client left.
func (x *exchange) holdUntil(back time.Time) bool {
	s := x.s
	wait := back.Sub(s.now())
	if s.holding.Add(1) > maxHolding {
		s.holding.Add(-1)
		return false
	}
	s.changes.Raise()
	defer func() {
		s.holding.Add(-1)
		s.changes.Raise()
	}()
	s.log.Info("holding the request for a resting account", "id", x.t.ID, "wait", wait.Round(time.Millisecond))
	t := time.NewTimer(wait + holdSlack)
	defer t.Stop()
	start := time.Now()
	defer func() {
		x.times.wait.held += time.Since(start)
		x.t.HeldMs = stat.Ms(x.times.wait.held)
	}()
	select {
	case <-x.r.Context().Done():
		return false
	case <-t.C:
	}
	return true
}

// holdSlack is waited past an account's return, so that its cooldown has surely ended.
const holdSlack = 50 * time.Millisecond

// HoldBound is the longest wait for a resting pool in force (negative: never).
func (s *Server) HoldBound() time.Duration { return time.Duration(s.hold.Load()) }
