package proxy

import (
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

// parseUsage reads the usage answer. Windows are told apart by their length (18000 s: five
// hours, 604800 s: a week), else taken as primary and secondary.
func parseUsage(body []byte, now time.Time) (*Quota, error) {
	type window struct {
		UsedPercent        float64 `json:"used_percent"`
		ResetAt            int64   `json:"reset_at"`
		ResetAfterSeconds  int64   `json:"reset_after_seconds"`
		LimitWindowSeconds int64   `json:"limit_window_seconds"`
	}
	type windows struct {
		Primary   *window `json:"primary_window"`
		Secondary *window `json:"secondary_window"`
	}
	var v struct {
		RateLimit windows `json:"rate_limit"`
		PlanType  string  `json:"plan_type"`
		Credits   *struct {
			HasCredits bool            `json:"has_credits"`
			Unlimited  bool            `json:"unlimited"`
			Balance    json.RawMessage `json:"balance"`
		} `json:"credits"`
		ResetCredits *struct {
			Available *int `json:"available_count"`
		} `json:"rate_limit_reset_credits"`
		Additional []struct {
			Name      string   `json:"limit_name"`
			Feature   string   `json:"metered_feature"`
			RateLimit *windows `json:"rate_limit"`
		} `json:"additional_rate_limits"`
	}
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
	read := func(ws windows, pu *float64, pr *time.Time, su *float64, sr *time.Time) {
		for i, w := range []*window{ws.Primary, ws.Secondary} {
			if w == nil {
				continue
			}
			if weekly := w.LimitWindowSeconds >= 7*24*3600 || (w.LimitWindowSeconds == 0 && i == 1); weekly {
				*su, *sr = w.UsedPercent, reset(w)
			} else {
				*pu, *pr = w.UsedPercent, reset(w)
			}
		}
	}
	q := &Quota{FetchedAt: now, PlanType: cleanText(v.PlanType, 32)}
	read(v.RateLimit, &q.PrimaryUsedPercent, &q.PrimaryResetsAt, &q.SecondaryUsedPercent, &q.SecondaryResetsAt)
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
		if a.RateLimit == nil || cleanText(a.Name, 64) == "" {
			continue
		}
		aq := AdditionalQuota{Name: cleanText(a.Name, 64), Feature: cleanText(a.Feature, 64)}
		read(*a.RateLimit, &aq.PrimaryUsedPercent, &aq.PrimaryResetsAt, &aq.SecondaryUsedPercent, &aq.SecondaryResetsAt)
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
