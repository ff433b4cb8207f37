package proxy

import (
	"cmp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/codexrelay/codexrelay/proxy/pool"
)

// Snapshot is the live state served at /relay/stats and read by the dashboard.
type Snapshot struct {
	Listen   string `json:"listen,omitempty"`
	UptimeMs int64  `json:"uptime_ms"`
	// SettingsGeneration is the generation of the settings file the relay follows.
	SettingsGeneration uint64 `json:"settings_generation"`
	// LastServed is the account that answered the last request that got an answer; Next is
	// the one a new request would go to first ("" when none can take one).
	LastServed    string         `json:"last_served,omitempty"`
	Next          string         `json:"next,omitempty"`
	Catalog       CatalogStats   `json:"catalog"`
	Serialization Serialization  `json:"serialization"`
	Requests      RequestStats   `json:"requests"`
	Accounts      []AccountStats `json:"accounts"`
	// ResetCredits is the reset-credit policy and what it spent (credits.go).
	ResetCredits ResetCreditStats `json:"reset_credits"`
}

// CatalogStats describes the model catalog (README: "The serialization cache and the catalog refresh").
type CatalogStats struct {
	AgeMs         int64         `json:"age_ms"` // -1 before the first catalog
	Models        int           `json:"models"`
	SWREnabled    bool          `json:"swr_enabled"`
	StaleMaxAgeMs int64         `json:"stale_max_age_ms"`
	TTLMs         int64         `json:"ttl_ms"`
	LastError     string        `json:"last_error"`
	Refresh       RefreshCounts `json:"refresh"`
	Refreshes     int64         `json:"refreshes"` // refreshes run (scheduled ones included)
	AliasErrors   []string      `json:"alias_errors,omitempty"`
}

// RequestStats counts client requests.
type RequestStats struct {
	Total     int64 `json:"total"`
	Errors    int64 `json:"errors"`
	Rotations int64 `json:"rotations"`
	InFlight  int64 `json:"in_flight"`
	// WebSockets counts the client WebSocket connections open now.
	WebSockets int64 `json:"websockets_open"`
	// SocketFrameBytes is what client WebSocket frames being read or waiting hold now, of the
	// relay-wide budget (Options.SocketReadBudget).
	SocketFrameBytes int64 `json:"websocket_frame_bytes"`
	// Held counts the requests waiting now for a resting pool to come back (hold.go).
	Held int64 `json:"held"`
	// SealedItems is how many account-sealed items the relay knows the sealer of; SealedOmitted
	// counts the sealed items left out of what an account received, SealedRetries the requests
	// retried without sealed content an account refused (sealed.go).
	SealedItems   int   `json:"sealed_items"`
	SealedOmitted int64 `json:"sealed_omitted"`
	SealedRetries int64 `json:"sealed_retries"`
	// TierOmitted counts the requests whose service tier was left out of what the serving
	// account received (a ChatGPT account refuses flex, auto and scale; tier.go).
	TierOmitted int64 `json:"tier_omitted"`
	// MedianPreparationMs is the median latencyBreakdown.preparationMs of the recent traces.
	MedianPreparationMs float64 `json:"median_preparation_ms"`
}

// AccountStats is one account's state; never a secret.
type AccountStats struct {
	Name          string     `json:"name"`
	Kind          Kind       `json:"kind"`
	API           API        `json:"api"`
	State         string     `json:"state"`
	CooldownUntil *time.Time `json:"cooldown_until"`
	// CooldownReason says why it cools down: CooldownRateLimit, CooldownFailing or
	// CooldownReserve ("" when ready).
	CooldownReason string `json:"cooldown_reason,omitempty"`
	// Reserve is the share of its binding window the relay keeps unspent (percent; 0: none).
	Reserve int `json:"reserve,omitempty"`
	// BucketRests are the buckets (metered features: a model family's own limit) resting on the
	// account while it serves the other models, each until its window resets, soonest first.
	BucketRests []BucketRest `json:"bucket_rests,omitempty"`
	Requests    int64        `json:"requests"`
	Failures    int64        `json:"failures"`
	LastError   string       `json:"last_error"`
	// Quota is the usage of a ChatGPT account's windows, when known.
	Quota *Quota `json:"quota,omitempty"`
	// ResetCredits are a ChatGPT account's banked resets, when read (never with the policy off).
	ResetCredits *ResetCredits `json:"reset_credits,omitempty"`
}

// BucketRest is one bucket resting on an account: the metered feature (codex_bengalfox), its
// limit's name as the account's reading gives it ("GPT-5.3-Codex-Spark"; "" when unread), and
// until when.
type BucketRest struct {
	Bucket string    `json:"bucket"`
	Name   string    `json:"name,omitempty"`
	Until  time.Time `json:"until"`
}

// counters are the proxy's running totals.
type counters struct {
	total, errors, rotations, inFlight atomic.Int64
	sockets                            atomic.Int64
	hits, misses, direct               atomic.Int64
	sealedOmitted, sealedRetries       atomic.Int64
	tierOmitted                        atomic.Int64
}

func (s *Server) snapshot() Snapshot {
	now := s.now()
	snap := Snapshot{
		UptimeMs: now.Sub(s.started).Milliseconds(),
		Catalog:  s.catalogStats(now),
		Serialization: Serialization{
			Hits: s.c.hits.Load(), Misses: s.c.misses.Load(), Direct: s.c.direct.Load(),
		},
		Requests: RequestStats{
			Total: s.c.total.Load(), Errors: s.c.errors.Load(),
			Rotations: s.c.rotations.Load(), InFlight: s.c.inFlight.Load(), WebSockets: s.c.sockets.Load(),
			Held: s.holding.Load(), SealedItems: s.seals.size(), SocketFrameBytes: s.frameBytes.Load(),
			SealedOmitted: s.c.sealedOmitted.Load(), SealedRetries: s.c.sealedRetries.Load(), TierOmitted: s.c.tierOmitted.Load(),
			MedianPreparationMs: s.traces.medianPreparation(),
		},
	}
	for _, m := range s.pool.List() {
		ms := m.Snapshot(now, "")
		st := AccountStats{Name: m.Name, Kind: m.Kind, API: m.API, State: ms.State, Reserve: m.Reserve,
			Requests: ms.Requests, Failures: ms.Failures, LastError: ms.LastError, Quota: ms.Quota,
			BucketRests: bucketRests(ms)}
		if st.State == StateCooldown {
			t := ms.CooldownUntil
			st.CooldownUntil, st.CooldownReason = &t, ms.CooldownReason
		}
		st.ResetCredits = s.resetCredits(m)
		snap.Accounts = append(snap.Accounts, st)
	}
	snap.ResetCredits = s.creditStats()
	if snap.Accounts == nil {
		snap.Accounts = []AccountStats{}
	}
	return snap
}

// bucketRests are a snapshot's resting buckets, named as its reading names them, soonest back
// first.
func bucketRests(ms pool.Snapshot) []BucketRest {
	var out []BucketRest
	for b, until := range ms.BucketRests {
		r := BucketRest{Bucket: b, Until: until}
		if a := ms.Quota.Bucket(b); a != nil {
			r.Name = a.Name
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b BucketRest) int {
		return cmp.Or(a.Until.Compare(b.Until), strings.Compare(a.Bucket, b.Bucket))
	})
	return out
}
