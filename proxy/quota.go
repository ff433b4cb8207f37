package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// QuotaInterval is how often ChatGPT accounts' usage is read in the background.
const QuotaInterval = 5 * time.Minute

// usageURL is the ChatGPT usage endpoint for a Codex backend base URL:
// https://chatgpt.com/backend-api/codex -> https://chatgpt.com/backend-api/wham/usage.
func usageURL(base string) string {
	return strings.TrimSuffix(strings.TrimRight(base, "/"), "/codex") + "/wham/usage"
}

// RefreshQuotas reads the usage of every enabled ChatGPT account at once. The last known
// figures stay in the stats while it runs and when an account's read fails.
func (s *Server) RefreshQuotas(ctx context.Context) {
	var wg sync.WaitGroup
	for _, m := range s.pool.list() {
		if m.Kind != KindChatGPT || m.Disabled {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.refreshQuota(ctx, m)
			s.refreshCredits(ctx, m) // banked resets, when the policy reads them (creditsclient.go)
		}()
	}
	wg.Wait()
}

// refreshQuota reads the usage of one ChatGPT account; a failed read keeps the last figures.
func (s *Server) refreshQuota(ctx context.Context, m *member) {
	q, err := s.fetchQuota(ctx, m)
	if err != nil {
		s.log.Debug("quota read failed", "account", m.Name, "error", err)
		return
	}
	m.mu.Lock()
	m.quota = q
	m.mu.Unlock()
	s.changes.Raise()
}

// refreshQuotaSoon reads an enabled ChatGPT account's usage in the background, if the relay is
// serving (a CLI process that only changes settings reads none).
func (s *Server) refreshQuotaSoon(m *member) {
	if m.Kind != KindChatGPT || m.Disabled || s.serving.Load() == 0 {
		return
	}
	go func() {
		s.refreshQuota(context.Background(), m)
		s.refreshCredits(context.Background(), m)
	}()
}

func (s *Server) fetchQuota(ctx context.Context, m *member) (*Quota, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	// The credit calls' path: a 401 (a token the backend stopped taking before its expiry) is
	// tried once more with a renewed sign-in.
	status, body, cred, err := s.creditCall(ctx, m, http.MethodGet, usageURL(m.BaseURL), nil)
	if err != nil {
		return nil, fmt.Errorf("usage: %s", describeTransportError(err, cred.Token))
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("usage: HTTP %d", status)
	}
	return parseUsage(body, s.now())
}

// usageAnswer is the ChatGPT backend's /wham/usage answer, as far as the relay reads an
// account's (parseUsage) or writes the pool's windows over the signed-in user's own
// (poolusage.go): the limit's windows and each metered feature's own (additional_rate_limits,
// told apart by limit_name), each window with its length and reset, an absent one null.
type usageAnswer struct {
	PlanType  string      `json:"plan_type"`
	RateLimit *usageLimit `json:"rate_limit"`
	Credits   *struct {
		HasCredits bool            `json:"has_credits"`
		Unlimited  bool            `json:"unlimited"`
		Balance    json.RawMessage `json:"balance"`
	} `json:"credits"`
	ResetCredits *struct {
		Available *int `json:"available_count"`
	} `json:"rate_limit_reset_credits"`
	Additional []additionalLimit `json:"additional_rate_limits"`
}

// usageLimit is one limit's state and windows.
type usageLimit struct {
	Allowed      bool         `json:"allowed"`
	LimitReached bool         `json:"limit_reached"`
	Primary      *usageWindow `json:"primary_window"`
	Secondary    *usageWindow `json:"secondary_window"`
}

// usageWindow is one window. Codex reads its fields as whole numbers: the relay writes them so.
type usageWindow struct {
	UsedPercent        float64 `json:"used_percent"`
	LimitWindowSeconds int64   `json:"limit_window_seconds"`
	ResetAfterSeconds  int64   `json:"reset_after_seconds"`
	ResetAt            int64   `json:"reset_at"`
}

// additionalLimit is a metered feature's own limit (a research preview's model, say).
type additionalLimit struct {
	LimitName      string      `json:"limit_name"`
	MeteredFeature string      `json:"metered_feature"`
	RateLimit      *usageLimit `json:"rate_limit"`
}

const (
	fiveHours = 5 * 3600
	week      = 7 * 24 * 3600
)

// parseUsage reads the usage answer. Windows are told apart by their length (18000 s: five
// hours, 604800 s: a week), else taken as primary and secondary; each keeps its length (an
// answer that gives none: five hours for the first, a week for the second).
func parseUsage(body []byte, now time.Time) (*Quota, error) {
	type window = usageWindow
	type windows = usageLimit
	var v usageAnswer
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("usage: %v", err)
	}
	reset := func(w *window) time.Time {
		if w.ResetAt > 0 {
			return time.Unix(w.ResetAt, 0)
		}
		if w.ResetAfterSeconds > 0 {
			return now.Add(time.Duration(w.ResetAfterSeconds) * time.Second)
		}
		return time.Time{}
	}
	// read fills the two windows of ws: the weekly one is the secondary.
	read := func(ws *windows, pu *float64, pr *time.Time, ps *int64, su *float64, sr *time.Time, ss *int64) {
		if ws == nil {
			return
		}
		for i, w := range []*window{ws.Primary, ws.Secondary} {
			if w == nil {
				continue
			}
			secs := min(max(w.LimitWindowSeconds, 0), 366*24*3600)
			if weekly := secs >= week || (secs == 0 && i == 1); weekly {
				*su, *sr, *ss = w.UsedPercent, reset(w), cmp.Or(secs, week)
			} else {
				*pu, *pr, *ps = w.UsedPercent, reset(w), cmp.Or(secs, fiveHours)
			}
		}
	}
	q := &Quota{FetchedAt: now, PlanType: cleanText(v.PlanType, 32)}
	read(v.RateLimit, &q.PrimaryUsedPercent, &q.PrimaryResetsAt, &q.PrimaryWindowSeconds,
		&q.SecondaryUsedPercent, &q.SecondaryResetsAt, &q.SecondaryWindowSeconds)
	if c := v.Credits; c != nil {
		q.Credits = &QuotaCredits{HasCredits: c.HasCredits, Unlimited: c.Unlimited}
		// The backend writes the balance as a string ("12.5") or a number.
		if b, err := payload.DecodeString(c.Balance); err == nil {
			q.Credits.Balance = cleanText(b, 32)
		} else if payload.KindOf(c.Balance) == payload.KindNumber {
			q.Credits.Balance = string(c.Balance)
		}
	}
	if rc := v.ResetCredits; rc != nil && rc.Available != nil && *rc.Available >= 0 {
		n := min(*rc.Available, 1000)
		q.ResetCredits = &n
	}
	for _, a := range v.Additional {
		if len(q.Additional) == maxAdditionalQuotas {
			break
		}
		if a.RateLimit == nil || cleanText(a.LimitName, 64) == "" {
			continue
		}
		aq := AdditionalQuota{Name: cleanText(a.LimitName, 64), Feature: cleanText(a.MeteredFeature, 64)}
		read(a.RateLimit, &aq.PrimaryUsedPercent, &aq.PrimaryResetsAt, &aq.PrimaryWindowSeconds,
			&aq.SecondaryUsedPercent, &aq.SecondaryResetsAt, &aq.SecondaryWindowSeconds)
		q.Additional = append(q.Additional, aq)
	}
	return q, nil
}

// maxAdditionalQuotas bounds the feature limits kept of one account (the backend sends a few).
const maxAdditionalQuotas = 8

// startQuotaLoop reads quotas now and every QuotaInterval until stop.
func (s *Server) startQuotaLoop() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		t := time.NewTicker(QuotaInterval)
		defer t.Stop()
		for {
			s.RefreshQuotas(ctx)
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return cancel
}

// usedScore orders accounts of equal priority: untouched first, then the most headroom.
func (m *member) usedScore() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.quota == nil {
		return 0
	}
	return max(m.quota.PrimaryUsedPercent, m.quota.SecondaryUsedPercent)
}

// quotaReset is when an exhausted window of m resets (the later one if both are), or zero.
func (m *member) quotaReset(now time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.quota
	if q == nil {
		return time.Time{}
	}
	var t time.Time
	if q.PrimaryUsedPercent >= 100 && q.PrimaryResetsAt.After(now) {
		t = q.PrimaryResetsAt
	}
	if q.SecondaryUsedPercent >= 100 && q.SecondaryResetsAt.After(t) {
		t = q.SecondaryResetsAt
	}
	if t.IsZero() && q.PrimaryResetsAt.After(now) {
		t = q.PrimaryResetsAt
	}
	return t
}
