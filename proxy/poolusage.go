package proxy

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/codexrelay/codexrelay/proxy/pool"
)

// The pool's usage, as Codex reads it for /status (and its desktop app before it starts a turn):
// GET {chatgpt_base_url}/wham/usage, with Codex's own ChatGPT sign-in (chatgptapi.go). The
// relay asks the ChatGPT backend for the signed-in user's own answer and writes the pool's
// windows over it: the plan, the credits and the banked resets stay the user's, and only the
// windows (rate_limit's and each metered feature's in additional_rate_limits, by limit_name)
// are the pool's (codex-lb PR #2286's contract).
//
// What "% left" means for a pool: for each window (the five hours, the week, and each metered
// feature's windows), what the accounts that can serve now have left together, against what
// they had: the sum of (100 - used) over those accounts, over 100 times their number. An
// account without a window (a weekly-only plan has no five hours) has all of it; an account
// without a metered feature's limit does not count for that limit. So the figure is never more
// than the accounts that can serve now have, and it reaches 100% used only when none can
// serve (then it resets when the first account is back). A window resets at the earliest reset
// of the accounts that count. A window no account has is absent (null), never invented.
//
// A reading older than usageFresh is read again first, waiting at most usageWait; an account
// that can serve and still has no fresh reading is left out of the figure, and the trace says
// so. When no account that can serve has one, or the pool has no ChatGPT account, the user's
// own answer goes as it came.

// usageFresh is how old an account's reading may be to speak for the pool (the background
// reads come every QuotaInterval).
const usageFresh = QuotaInterval + time.Minute

// usageWait bounds how long Codex's usage read waits for the readings that are not fresh.
const usageWait = 3 * time.Second

// poolWindows is the pool's part of a usage answer.
type poolWindows struct {
	serving bool // an account can serve
	// servingCounted says that an account that can serve has a fresh reading: without one,
	// the figures could only be invented.
	servingCounted bool
	limit          pool.UsageLimit
	additional     []pool.AdditionalLimit
	counted        []string // the accounts whose readings made the figures
	unread         []string // accounts that can serve, left out: no fresh reading
}

// poolAccount is one enabled ChatGPT account as its reading counts for the pool.
type poolAccount struct {
	name   string
	serves bool
	back   time.Time // when it is back, when it rests
	q      *Quota    // its reading (nil when it cannot serve and was never read)
}

// poolUsage works out the pool's windows at now, reading again (at most usageWait) the usage of
// the accounts that can serve and whose reading is not fresh. ok is false when the pool has no
// enabled ChatGPT account.
func (s *Server) poolUsage(ctx context.Context) (pw poolWindows, ok bool) {
	var stale []*member
	for _, m := range s.pool.List() {
		if m.Kind != KindChatGPT || m.Disabled {
			continue
		}
		ok = true
		if q := m.Quota(); m.Usable("", s.now()) && (q == nil || s.now().Sub(q.FetchedAt) > usageFresh) {
			stale = append(stale, m)
		}
	}
	if !ok {
		return pw, false
	}
	if len(stale) > 0 {
		ctx, cancel := context.WithTimeout(ctx, usageWait)
		var wg sync.WaitGroup
		for _, m := range stale {
			wg.Add(1)
			go func() { defer wg.Done(); s.refreshQuota(ctx, m) }()
		}
		wg.Wait()
		cancel()
	}
	return s.poolNow(s.now()), true
}

// poolNow is the pool's windows at now from the readings the accounts have (none is read
// again); pw.counted is empty when no enabled ChatGPT account has a fresh reading. An account
// whose reading says its binding window is spent cannot serve, though no limit was met yet.
func (s *Server) poolNow(now time.Time) poolWindows {
	var accts []poolAccount
	var unread []string
	for _, m := range s.pool.List() {
		if m.Kind != KindChatGPT || m.Disabled {
			continue
		}
		q := m.Quota()
		b, read := q.Binding(now)
		spent := read && b.Left <= 0
		a := poolAccount{name: m.Name, serves: m.Usable("", now) && !spent, back: m.RestsUntil(now), q: q}
		if a.serves && (a.q == nil || now.Sub(a.q.FetchedAt) > usageFresh) {
			unread = append(unread, m.Name)
			continue
		}
		if spent && a.back.IsZero() {
			a.back = b.Resets // spent by its reading: back when that window resets
		}
		accts = append(accts, a)
	}
	return pooled(accts, unread, now)
}

// pooled is the pool's windows made of the accounts' readings (see the file's comment).
func pooled(accts []poolAccount, unread []string, now time.Time) poolWindows {
	pw := poolWindows{unread: unread}
	var firstBack time.Time
	for _, a := range accts {
		pw.counted = append(pw.counted, a.name)
		if a.serves {
			pw.serving, pw.servingCounted = true, true
		} else if !a.back.IsZero() && (firstBack.IsZero() || a.back.Before(firstBack)) {
			firstBack = a.back
		}
	}
	pw.serving = pw.serving || len(unread) > 0
	pw.limit = pool.UsageLimit{Allowed: pw.serving, LimitReached: !pw.serving}
	core := func(primary bool) func(q *Quota) (windowReading, bool) {
		return func(q *Quota) (windowReading, bool) {
			if primary {
				return windowReading{q.PrimaryUsedPercent, q.PrimaryResetsAt, q.PrimaryWindowSeconds}, true
			}
			return windowReading{q.SecondaryUsedPercent, q.SecondaryResetsAt, q.SecondaryWindowSeconds}, true
		}
	}
	pw.limit.Primary, pw.limit.Secondary = ordered(
		poolWindow(accts, core(true), pw.serving, firstBack, now),
		poolWindow(accts, core(false), pw.serving, firstBack, now))
	var names []string
	for _, a := range accts {
		if a.q == nil {
			continue
		}
		for _, aq := range a.q.Additional {
			if !slices.Contains(names, aq.Name) {
				names = append(names, aq.Name)
			}
		}
	}
	for _, name := range names {
		feature := ""
		of := func(primary bool) func(q *Quota) (windowReading, bool) {
			return func(q *Quota) (windowReading, bool) {
				for _, aq := range q.Additional {
					if aq.Name == name {
						feature = aq.Feature
						if primary {
							return windowReading{aq.PrimaryUsedPercent, aq.PrimaryResetsAt, aq.PrimaryWindowSeconds}, true
						}
						return windowReading{aq.SecondaryUsedPercent, aq.SecondaryResetsAt, aq.SecondaryWindowSeconds}, true
					}
				}
				return windowReading{}, false
			}
		}
		l := pool.UsageLimit{Allowed: pw.serving, LimitReached: !pw.serving}
		l.Primary, l.Secondary = ordered(poolWindow(accts, of(true), pw.serving, firstBack, now),
			poolWindow(accts, of(false), pw.serving, firstBack, now))
		pw.additional = append(pw.additional, pool.AdditionalLimit{LimitName: name, MeteredFeature: feature, RateLimit: &l})
	}
	return pw
}

// windowReading is one window of an account's reading; a zero length: the account has no such
// window.
type windowReading struct {
	used  float64
	reset time.Time
	secs  int64
}

// poolWindow is the pool's figure of one window, read of each account by get (false: the
// account has no such limit at all); nil when no account has the window.
func poolWindow(accts []poolAccount, get func(*Quota) (windowReading, bool), serving bool, firstBack, now time.Time) *pool.UsageWindow {
	var n int
	var left float64
	var secs int64
	var reset time.Time
	for _, a := range accts {
		if a.q == nil {
			continue // cannot serve, never read: it has nothing left, and nothing to say
		}
		w, has := get(a.q)
		if !has {
			continue
		}
		if w.secs > 0 {
			secs = max(secs, w.secs)
			if w.reset.After(now) && (reset.IsZero() || w.reset.Before(reset)) {
				reset = w.reset
			}
		}
		if !a.serves {
			continue // it has nothing left now
		}
		n++
		if w.secs > 0 {
			left += max(0, 100-min(w.used, 100))
		} else {
			left += 100 // no such window: all of it
		}
	}
	if secs == 0 {
		return nil
	}
	used := 100.0
	if n > 0 {
		used = math.Round(100 - left/float64(n))
		if left > 0 && used >= 100 {
			used = 99 // an account can still serve: not reached
		}
	}
	if !serving && !firstBack.IsZero() && (reset.IsZero() || firstBack.Before(reset)) {
		reset = firstBack // nothing serves: the pool is back when its first account is
	}
	w := &pool.UsageWindow{UsedPercent: max(used, 0), LimitWindowSeconds: secs}
	if reset.After(now) {
		w.ResetAfterSeconds, w.ResetAt = int64(reset.Sub(now).Seconds()), reset.Unix()
	}
	return w
}

// ordered puts the shorter of two windows first: the primary and the secondary of an answer
// (a pool with the week alone has it as its primary, and no secondary).
func ordered(a, b *pool.UsageWindow) (*pool.UsageWindow, *pool.UsageWindow) {
	if a == nil {
		return b, nil
	}
	if b != nil && b.LimitWindowSeconds < a.LimitWindowSeconds {
		return b, a
	}
	return a, b
}

// overlay writes the pool's windows over the user's own usage answer (a JSON object): the
// windows of rate_limit, and of each metered feature's limit by limit_name (a limit the pool
// has and the user's answer lacks is added); everything else stays as it came. A body that is
// not a JSON object is answered with the pool's windows alone.
func (pw poolWindows) overlay(own []byte) []byte {
	var body map[string]json.RawMessage
	if json.Unmarshal(own, &body) != nil || body == nil {
		body = map[string]json.RawMessage{}
	}
	body["rate_limit"] = overlayLimit(body["rate_limit"], &pw.limit)
	var theirs []json.RawMessage
	json.Unmarshal(body["additional_rate_limits"], &theirs)
	done := map[string]bool{}
	out := make([]json.RawMessage, 0, len(theirs)+len(pw.additional))
	for _, raw := range theirs {
		var id struct {
			LimitName string `json:"limit_name"`
		}
		var entry map[string]json.RawMessage
		if json.Unmarshal(raw, &id) != nil || json.Unmarshal(raw, &entry) != nil {
			out = append(out, raw)
			continue
		}
		for _, p := range pw.additional {
			if p.LimitName == id.LimitName && !done[p.LimitName] {
				done[p.LimitName] = true
				entry["rate_limit"] = overlayLimit(entry["rate_limit"], p.RateLimit)
				raw, _ = json.Marshal(entry)
			}
		}
		out = append(out, raw)
	}
	for _, p := range pw.additional {
		if !done[p.LimitName] {
			b, _ := json.Marshal(p)
			out = append(out, b)
		}
	}
	body["additional_rate_limits"], _ = json.Marshal(out)
	pw.overlayState(body)
	b, _ := json.Marshal(body)
	return b
}

// overlayState writes the pool's state over the user's own: the kind of limit that stops it
// (rate_limit_reached_type, null while an account can serve) and its spend control (no spend
// control of the user's stops the pool: reached is false when the answer has one).
func (pw poolWindows) overlayState(body map[string]json.RawMessage) {
	body["rate_limit_reached_type"] = json.RawMessage("null")
	if !pw.serving {
		body["rate_limit_reached_type"], _ = json.Marshal(map[string]string{"type": reachedRateLimit})
	}
	var sc map[string]json.RawMessage
	if json.Unmarshal(body["spend_control"], &sc) == nil && sc != nil {
		sc["reached"] = json.RawMessage("false")
		body["spend_control"], _ = json.Marshal(sc)
	}
}

// overlayLimit is the user's limit object with the pool's state and windows over it.
func overlayLimit(theirs json.RawMessage, pool *pool.UsageLimit) json.RawMessage {
	var l map[string]json.RawMessage
	if json.Unmarshal(theirs, &l) != nil || l == nil {
		l = map[string]json.RawMessage{}
	}
	set := func(k string, v any) { l[k], _ = json.Marshal(v) }
	set("allowed", pool.Allowed)
	set("limit_reached", pool.LimitReached)
	set("primary_window", pool.Primary)
	set("secondary_window", pool.Secondary)
	b, _ := json.Marshal(l)
	return b
}

// ownUsage asks the ChatGPT backend for the signed-in user's own usage, with the headers of
// Codex's request (its sign-in); ok is false when no answer could be had (the backend is
// unreachable, or answered with a server error). A 2xx body or the backend's refusal comes back.
func (s *Server) ownUsage(r *http.Request) (status int, body []byte, header http.Header, ok bool) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	u := strings.TrimSuffix(s.opt.ChatGPTBackend, "/") + "/wham/usage"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, nil, false
	}
	for k, vs := range r.Header {
		if !hopHeader(k) {
			req.Header[k] = vs
		}
	}
	req.Header.Del("Accept-Encoding") // the transport's own
	resp, err := s.opt.Transport.RoundTrip(req)
	if err != nil {
		return 0, nil, nil, false
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode >= 500 {
		return 0, nil, nil, false
	}
	return resp.StatusCode, body, resp.Header, true
}

// hopHeader reports whether a request header belongs to one connection, not to the request.
func hopHeader(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Host", "Content-Length":
		return true
	}
	return false
}
