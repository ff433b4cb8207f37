package pool

import (
	"cmp"
	"encoding/json"
	"fmt"
	"time"

	"github.com/codexrelay/codexrelay/proxy/internal/redact"
	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Quota is a ChatGPT account's usage: the five-hour (primary) and weekly (secondary) windows.
// A window's length is as the backend said it; 0 says the account has no such window (a
// weekly-only plan has no five hours), and its used percent is then 0.
type Quota struct {
	PrimaryUsedPercent     float64   `json:"primary_used_percent"`
	PrimaryResetsAt        time.Time `json:"primary_resets_at,omitzero"`
	PrimaryWindowSeconds   int64     `json:"primary_window_seconds,omitempty"`
	SecondaryUsedPercent   float64   `json:"secondary_used_percent"`
	SecondaryResetsAt      time.Time `json:"secondary_resets_at,omitzero"`
	SecondaryWindowSeconds int64     `json:"secondary_window_seconds,omitempty"`
	FetchedAt              time.Time `json:"fetched_at"`
	// What /wham/usage carries beside the two windows: the plan, the credits balance, how many
	// banked resets are available, and the limits of metered features (a model family, say)
	// that have windows of their own.
	PlanType     string            `json:"plan_type,omitempty"`
	Credits      *QuotaCredits     `json:"credits,omitempty"`
	ResetCredits *int              `json:"reset_credits_available,omitempty"`
	Additional   []AdditionalQuota `json:"additional,omitempty"`
}

// HasPrimary reports whether the account has a five-hour window (a reading that says no length
// for either window, an older one, is taken to have both).
func (q *Quota) HasPrimary() bool { return q.PrimaryWindowSeconds > 0 || q.SecondaryWindowSeconds == 0 }

// HasSecondary reports whether the account has a weekly window (as HasPrimary).
func (q *Quota) HasSecondary() bool {
	return q.SecondaryWindowSeconds > 0 || q.PrimaryWindowSeconds == 0
}

// QuotaCredits is a ChatGPT account's credits balance (balance as the backend writes it).
type QuotaCredits struct {
	HasCredits bool   `json:"has_credits"`
	Unlimited  bool   `json:"unlimited"`
	Balance    string `json:"balance,omitempty"`
}

// AdditionalQuota is the windows of one metered feature's own limit (Name is its limit_name,
// which tells the limits apart), with their lengths as in Quota.
type AdditionalQuota struct {
	Name                   string    `json:"name"`
	Feature                string    `json:"feature,omitempty"`
	PrimaryUsedPercent     float64   `json:"primary_used_percent"`
	PrimaryResetsAt        time.Time `json:"primary_resets_at,omitzero"`
	PrimaryWindowSeconds   int64     `json:"primary_window_seconds,omitempty"`
	SecondaryUsedPercent   float64   `json:"secondary_used_percent"`
	SecondaryResetsAt      time.Time `json:"secondary_resets_at,omitzero"`
	SecondaryWindowSeconds int64     `json:"secondary_window_seconds,omitempty"`
}

// UsageAnswer is the ChatGPT backend's /wham/usage answer, as far as the relay reads an
// account's (ParseUsage) or writes the pool's windows over the signed-in user's own
// (proxy's poolusage.go): the limit's windows and each metered feature's own (additional_rate_limits,
// told apart by limit_name), each window with its length and reset, an absent one null.
type UsageAnswer struct {
	PlanType  string      `json:"plan_type"`
	RateLimit *UsageLimit `json:"rate_limit"`
	Credits   *struct {
		HasCredits bool            `json:"has_credits"`
		Unlimited  bool            `json:"unlimited"`
		Balance    json.RawMessage `json:"balance"`
	} `json:"credits"`
	ResetCredits *struct {
		Available *int `json:"available_count"`
	} `json:"rate_limit_reset_credits"`
	Additional []AdditionalLimit `json:"additional_rate_limits"`
}

// UsageLimit is one limit's state and windows.
type UsageLimit struct {
	Allowed      bool         `json:"allowed"`
	LimitReached bool         `json:"limit_reached"`
	Primary      *UsageWindow `json:"primary_window"`
	Secondary    *UsageWindow `json:"secondary_window"`
}

// UsageWindow is one window. Codex reads its fields as whole numbers: the relay writes them so.
type UsageWindow struct {
	UsedPercent        float64 `json:"used_percent"`
	LimitWindowSeconds int64   `json:"limit_window_seconds"`
	ResetAfterSeconds  int64   `json:"reset_after_seconds"`
	ResetAt            int64   `json:"reset_at"`
}

// AdditionalLimit is a metered feature's own limit (a research preview's model, say).
type AdditionalLimit struct {
	LimitName      string      `json:"limit_name"`
	MeteredFeature string      `json:"metered_feature"`
	RateLimit      *UsageLimit `json:"rate_limit"`
}

const (
	fiveHours = 5 * 3600
	week      = 7 * 24 * 3600
)

// ParseUsage reads the usage answer. Windows are told apart by their length (18000 s: five
// hours, 604800 s: a week), else taken as primary and secondary; each keeps its length (an
// answer that gives none: five hours for the first, a week for the second).
func ParseUsage(body []byte, now time.Time) (*Quota, error) {
	type window = UsageWindow
	type windows = UsageLimit
	var v UsageAnswer
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
	q := &Quota{FetchedAt: now, PlanType: redact.Clean(v.PlanType, 32)}
	read(v.RateLimit, &q.PrimaryUsedPercent, &q.PrimaryResetsAt, &q.PrimaryWindowSeconds,
		&q.SecondaryUsedPercent, &q.SecondaryResetsAt, &q.SecondaryWindowSeconds)
	if c := v.Credits; c != nil {
		q.Credits = &QuotaCredits{HasCredits: c.HasCredits, Unlimited: c.Unlimited}
		// The backend writes the balance as a string ("12.5") or a number.
		if b, err := payload.DecodeString(c.Balance); err == nil {
			q.Credits.Balance = redact.Clean(b, 32)
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
		if a.RateLimit == nil || redact.Clean(a.LimitName, 64) == "" {
			continue
		}
		aq := AdditionalQuota{Name: redact.Clean(a.LimitName, 64), Feature: redact.Clean(a.MeteredFeature, 64)}
		read(a.RateLimit, &aq.PrimaryUsedPercent, &aq.PrimaryResetsAt, &aq.PrimaryWindowSeconds,
			&aq.SecondaryUsedPercent, &aq.SecondaryResetsAt, &aq.SecondaryWindowSeconds)
		q.Additional = append(q.Additional, aq)
	}
	return q, nil
}

// maxAdditionalQuotas bounds the feature limits kept of one account (the backend sends a few).
const maxAdditionalQuotas = 8

// usedScore orders accounts of equal priority: untouched first, then the most headroom.
func (m *Member) usedScore() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.quota == nil {
		return 0
	}
	return max(m.quota.PrimaryUsedPercent, m.quota.SecondaryUsedPercent)
}

// QuotaReset is when an exhausted window of m resets (the later one if both are), or zero.
func (m *Member) QuotaReset(now time.Time) time.Time {
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

// IncompleteReason is a terminal event's response.incomplete_details.reason ("": none).
func IncompleteReason(data []byte) string {
	var v struct {
		Response struct {
			IncompleteDetails struct {
				Reason string `json:"reason"`
			} `json:"incomplete_details"`
		} `json:"response"`
	}
	json.Unmarshal(data, &v)
	return v.Response.IncompleteDetails.Reason
}
