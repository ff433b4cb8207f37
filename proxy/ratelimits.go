package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/codexrelay/codexrelay/proxy/pool"
)

// Codex's live meter shows the pool. Codex reads the rate limits of each Responses answer from
// its x-codex-* headers over HTTP, and from a codex.rate_limits event over a WebSocket (it
// ignores a socket's handshake headers); its status line shows them and its app-server sends
// them to IDEs and the desktop app as account/rateLimits/updated after every model response
// (testdata/codex-0.171/ratelimits). Through the relay every answer carries the pool's figures,
// with the meaning of the pooled /wham/usage (poolusage.go): what the accounts that can serve
// have left of each window. The serving account's own figures, its other families (a model's
// bucket: Codex keeps the last family it parses, so a bucket's would hide the pool's) and its
// credits never reach the client; x-codex-rate-limit-reached-type says only that the pool is
// dry (the relay's own 429). A pool with no fresh reading of a ChatGPT account says nothing.

// rateLimitsEventName is the event that carries a socket's rate limits.
const rateLimitsEventName = "codex.rate_limits"

// rateLimitHeader reports whether lk (lower case) is a rate-limit header of Codex's: a window
// of any family (x-NAME-primary-used-percent, ...), a family's name, the credits, the active
// limit and its kind.
func rateLimitHeader(lk string) bool {
	if !strings.HasPrefix(lk, "x-") {
		return false
	}
	for _, suffix := range []string{"-used-percent", "-window-minutes", "-reset-at", "-reset-after-seconds",
		"-limit-name", "-over-secondary-limit-percent"} {
		if strings.HasSuffix(lk, suffix) {
			return true
		}
	}
	return strings.HasPrefix(lk, "x-codex-credits-") || lk == "x-codex-active-limit" ||
		lk == "x-codex-rate-limit-reached-type" || lk == "x-codex-promo-message"
}

// poolLimits is the pool's windows now, when an account's fresh reading makes them.
func (s *Server) poolLimits() (poolWindows, bool) {
	pw := s.poolNow(s.now())
	return pw, len(pw.counted) > 0 && (pw.limit.Primary != nil || pw.limit.Secondary != nil)
}

// setPoolLimits writes the pool's windows into h as Codex's default family (codex).
func setPoolLimits(h http.Header, pw poolWindows) {
	for name, w := range map[string]*pool.UsageWindow{"primary": pw.limit.Primary, "secondary": pw.limit.Secondary} {
		if w == nil {
			continue
		}
		h.Set("X-Codex-"+name+"-Used-Percent", strconv.FormatFloat(w.UsedPercent, 'f', -1, 64))
		if w.LimitWindowSeconds > 0 {
			h.Set("X-Codex-"+name+"-Window-Minutes", strconv.FormatInt(w.LimitWindowSeconds/60, 10))
		}
		if w.ResetAt > 0 {
			h.Set("X-Codex-"+name+"-Reset-At", strconv.FormatInt(w.ResetAt, 10))
		}
	}
}

// relayHeaders copies the upstream headers worth relaying (copyRelayHeaders) with the pool's
// rate limits over the serving account's.
func (x *exchange) relayHeaders(dst, src http.Header) {
	copyRelayHeaders(dst, src)
	if pw, ok := x.s.poolLimits(); ok {
		setPoolLimits(dst, pw)
	}
}

// rateLimitsEvent is the codex.rate_limits event of the pool's windows (nil: the pool has no
// figures), for a WebSocket client.
func (s *Server) rateLimitsEvent() []byte {
	pw, ok := s.poolLimits()
	if !ok {
		return nil
	}
	type window struct {
		UsedPercent float64 `json:"used_percent"`
		Minutes     int64   `json:"window_minutes,omitempty"`
		ResetAt     int64   `json:"reset_at,omitempty"`
	}
	of := func(w *pool.UsageWindow) *window {
		if w == nil {
			return nil
		}
		return &window{UsedPercent: w.UsedPercent, Minutes: w.LimitWindowSeconds / 60, ResetAt: w.ResetAt}
	}
	b, _ := json.Marshal(map[string]any{"type": rateLimitsEventName, "metered_limit_name": "codex",
		"rate_limits": map[string]*window{"primary": of(pw.limit.Primary), "secondary": of(pw.limit.Secondary)}})
	return b
}

// dryHeaders are the rate-limit headers of the relay's own 429 when no account can serve: the
// pool's windows, spent, and the kind of limit that stops it.
func (s *Server) dryHeaders() http.Header {
	h := http.Header{"X-Codex-Active-Limit": {"codex"}, "X-Codex-Rate-Limit-Reached-Type": {reachedRateLimit}}
	if pw, ok := s.poolLimits(); ok {
		setPoolLimits(h, pw)
	}
	return h
}

// reachedRateLimit is the kind of limit that stops a dry pool: its accounts' usage limits
// (the kinds a workspace's credits or its owner set are the user's own, not the pool's).
const reachedRateLimit = "rate_limit_reached"
