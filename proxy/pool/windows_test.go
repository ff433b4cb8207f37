package pool

import (
	"context"
	"net/http"
	"testing"
	"time"
)

const spark = "gpt-5.3-codex-spark"

// sparkReading is a reading whose five hours are used usedPct and reset at reset, with Spark's
// own bucket (codex_bengalfox) used sparkPct, resetting at sparkReset.
func sparkReading(now time.Time, usedPct float64, reset time.Time, sparkPct float64, sparkReset time.Time) *Quota {
	return &Quota{FetchedAt: now, PrimaryUsedPercent: usedPct, PrimaryResetsAt: reset, PrimaryWindowSeconds: 18000,
		Additional: []AdditionalQuota{{Name: "GPT-5.3-Codex-Spark", Feature: "codex_bengalfox",
			PrimaryUsedPercent: sparkPct, PrimaryResetsAt: sparkReset, PrimaryWindowSeconds: 18000}}}
}

// A limit that names a bucket rests that bucket's models on the account, and only them, until
// the bucket's window resets: the account serves the other models meanwhile.
func TestABucketsLimitRestsItsModelsAlone(t *testing.T) {
	p, now := newTestPool(Account{Name: "a", Kind: KindChatGPT, Credentials: &renewable{token: "t"}})
	m := p.List()[0]
	sparkBack := now.Add(40 * time.Minute)
	p.SetQuota(m, sparkReading(now, 20, now.Add(3*time.Hour), 90, sparkBack))
	h := http.Header{"X-Codex-Active-Limit": {"codex_bengalfox"}}
	out := p.Call(context.Background(), m, spark, func(Credential) *Said {
		w := SaidHTTP(&http.Response{StatusCode: 429, Header: h}, []byte(`{"error":{"code":"usage_limit_reached","message":"Spark's limit"}}`))
		return &w
	})
	if j := out.Judgment; j == nil || j.Scope != BucketScope || j.Bucket != "codex_bengalfox" || !j.Until.Equal(sparkBack) {
		t.Fatalf("judgment %+v, want the bucket resting until %v", out.Judgment, sparkBack)
	}
	if m.Usable(spark, now) || !m.Usable("gpt-5-codex", now) || m.State(now) != StateReady {
		t.Fatalf("spark usable %v, gpt-5-codex usable %v, state %s: want Spark alone resting",
			m.Usable(spark, now), m.Usable("gpt-5-codex", now), m.State(now))
	}
	if s := m.Snapshot(now, spark); !s.BucketRests["codex_bengalfox"].Equal(sparkBack) || !s.ModelBlockedUntil.Equal(sparkBack) {
		t.Fatalf("snapshot %+v", s)
	}
	if later := sparkBack.Add(time.Second); !m.Usable(spark, later) {
		t.Fatal("Spark still rests past its window's reset")
	}
	// A limit of the account's own (or one no reading names) rests the whole account.
	out = p.Call(context.Background(), m, "gpt-5-codex", func(Credential) *Said {
		w := SaidHTTP(&http.Response{StatusCode: 429, Header: http.Header{"X-Codex-Active-Limit": {"codex"}}}, nil)
		return &w
	})
	if out.Judgment.Scope != AccountScope || m.State(now) != StateCooldown {
		t.Fatalf("the account's own limit: %+v, state %s", out.Judgment, m.State(now))
	}
	// Spark's bucket is a limit apart: once it is back, Spark is served while the account rests
	// for its own limit, and the other models are not.
	later := sparkBack.Add(time.Minute)
	if !m.Usable(spark, later) || m.Usable("gpt-5-codex", later) {
		t.Fatalf("while the account rests for its own limit: Spark usable %v, gpt-5-codex usable %v",
			m.Usable(spark, later), m.Usable("gpt-5-codex", later))
	}
}

// Routing reads the buckets: an account whose reading says the bucket of a request's model is
// spent is not tried for it, before any limit is met.
func TestASpentBucketIsAvoidedBeforeTrying(t *testing.T) {
	p, now := newTestPool(Account{Name: "a", Kind: KindChatGPT}, Account{Name: "b", Kind: KindChatGPT})
	a, b := p.List()[0], p.List()[1]
	p.SetQuota(a, sparkReading(now, 10, now.Add(time.Hour), 100, now.Add(20*time.Minute)))
	p.SetQuota(b, sparkReading(now, 60, now.Add(time.Hour), 10, now.Add(20*time.Minute)))
	all := func(*Member) bool { return true }
	if c := p.Candidates(spark, "", now, all); len(c) != 1 || c[0] != b {
		t.Fatalf("Spark's candidates: %v, want b alone", names(c))
	}
	if c := p.Candidates("gpt-5-codex", "", now, all); len(c) != 2 || c[0] != a {
		t.Fatalf("gpt-5-codex's candidates: %v, want a, b", names(c))
	}
}

// An account keeps its reserve: once its binding window has less left than the reserve it
// rests (reason reserve) until that window resets, and the next request goes elsewhere.
func TestAReserveHolds(t *testing.T) {
	p, now := newTestPool(Account{Name: "shared", Kind: KindChatGPT, Reserve: 20}, Account{Name: "mine", Kind: KindChatGPT})
	shared := p.List()[0]
	reset := now.Add(2 * time.Hour)
	p.SetQuota(shared, &Quota{FetchedAt: now, PrimaryUsedPercent: 75, PrimaryResetsAt: reset, PrimaryWindowSeconds: 18000})
	if shared.State(now) != StateReady {
		t.Fatal("25% left is above a 20% reserve: it should serve")
	}
	p.SetQuota(shared, &Quota{FetchedAt: now, PrimaryUsedPercent: 85, PrimaryResetsAt: reset, PrimaryWindowSeconds: 18000,
		SecondaryUsedPercent: 30, SecondaryResetsAt: now.Add(90 * time.Hour), SecondaryWindowSeconds: 604800})
	s := shared.Snapshot(now, "")
	if s.State != StateCooldown || s.CooldownReason != CooldownReserve || !s.CooldownUntil.Equal(reset) {
		t.Fatalf("at 15%% left: %+v", s)
	}
	if c := p.Candidates("gpt-5-codex", "", now, func(*Member) bool { return true }); len(c) != 1 || c[0].Name != "mine" {
		t.Fatalf("candidates %v", names(c))
	}
	if !p.BackAt(now, func(m *Member) bool { return m == shared }).Equal(reset) {
		t.Fatal("a request held for the pool would not know when the reserve lets the account serve again")
	}
	if shared.State(reset.Add(time.Second)) != StateReady {
		t.Fatal("the reserve still holds after the window reset")
	}
}

// reset-first spends first the quota that expires first: of two accounts with quota, the one
// whose binding window resets sooner goes first whatever the list order; one with nothing left
// in that window, or no reading, after.
func TestResetFirstOrdersBySoonestReset(t *testing.T) {
	p, now := newTestPool(Account{Name: "b", Kind: KindChatGPT}, Account{Name: "a", Kind: KindChatGPT},
		Account{Name: "key", Kind: KindOpenAI})
	p.SetStrategy(StrategyResetFirst)
	b, a := p.List()[0], p.List()[1]
	p.SetQuota(b, &Quota{FetchedAt: now, PrimaryUsedPercent: 10, PrimaryResetsAt: now.Add(45 * time.Second), PrimaryWindowSeconds: 18000})
	p.SetQuota(a, &Quota{FetchedAt: now, PrimaryUsedPercent: 10, PrimaryResetsAt: now.Add(7 * time.Second), PrimaryWindowSeconds: 18000})
	all := func(*Member) bool { return true }
	if c := names(p.Candidates("m", "", now, all)); c != "a b key" {
		t.Fatalf("order %q, want a b key", c)
	}
	// The binding window is the one with the least left: b's week, nearly spent, resets later
	// than a's five hours.
	p.SetQuota(b, &Quota{FetchedAt: now, PrimaryUsedPercent: 10, PrimaryResetsAt: now.Add(3 * time.Second), PrimaryWindowSeconds: 18000,
		SecondaryUsedPercent: 95, SecondaryResetsAt: now.Add(50 * time.Hour), SecondaryWindowSeconds: 604800})
	if c := names(p.Candidates("m", "", now, all)); c != "a b key" {
		t.Fatalf("order %q, want a b key (b's binding window is its week)", c)
	}
	// A session keeps its account (its prompt cache) whatever the strategy says.
	p.Served(b, "s1")
	if c := names(p.Candidates("m", "s1", now, all)); c != "b a key" {
		t.Fatalf("order for the session %q, want b first", c)
	}
}

func names(ms []*Member) string {
	s := ""
	for i, m := range ms {
		if i > 0 {
			s += " "
		}
		s += m.Name
	}
	return s
}
