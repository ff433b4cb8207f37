package ledger

import (
	"context"
	"slices"
	"testing"
	"time"
)

// burnFixture: "a" has seven readings over two five-hour windows and one weekly window; "b"
// two readings of one window; "c" rows but no reading. now is N.
//
// Account a (B = N-10h; primary resets at B+8h, then at B+9h; weekly at N+3d):
//
//	q0 B+0h  P10 S20 | 1000 tokens at B+0.5h
//	q1 B+1h  P12 S20 | P +2 for 1000                          | 600 at B+1.5h
//	q2 B+2h  P12 S21 | P flat; S +1 for 1000+600              | 400 at B+2.5h
//	q3 B+3h  P13 S21 | P +1 for 600+400 (flat stretch merged)  | 2000 at B+3.5h
//	q4 B+4h  P1 (new window) S22 | P: 2000 not counted; S +1 for 400+2000 | 800 at B+4.5h
//	q5 B+5h  P3 S22  | P +2 for 800                            | 5000 at B+5.5h
//	q6 B+6h  P3 S22  | flat: 5000 not counted yet
//
// Primary: (1000+1000+800) / (2+1+2) = 560 per 1%. Secondary: (1600+2400) / 2 = 2000 per 1%.
// Account b: 3000 tokens for 50% -> 53%: 1000 per 1%.
var burnNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func burnFixture(t *testing.T) *Ledger {
	N := burnNow
	B := N.Add(-10 * time.Hour)
	h := func(x float64) time.Time { return B.Add(time.Duration(x * float64(time.Hour))) }
	l := open(t, Options{Now: newClock(N).now})
	r1, r2, week := h(8), h(9), N.Add(72*time.Hour)
	jitter := 30 * time.Second // resets-at derived from "resets in N s" moves a little
	for _, q := range []QuotaReading{
		{Time: h(0), PrimaryUsedPercent: 10, PrimaryResetsAt: r1, SecondaryUsedPercent: 20, SecondaryResetsAt: week},
		{Time: h(1), PrimaryUsedPercent: 12, PrimaryResetsAt: r1.Add(jitter), SecondaryUsedPercent: 20, SecondaryResetsAt: week},
		{Time: h(2), PrimaryUsedPercent: 12, PrimaryResetsAt: r1, SecondaryUsedPercent: 21, SecondaryResetsAt: week.Add(-jitter)},
		{Time: h(3), PrimaryUsedPercent: 13, PrimaryResetsAt: r1, SecondaryUsedPercent: 21, SecondaryResetsAt: week},
		{Time: h(4), PrimaryUsedPercent: 1, PrimaryResetsAt: r2, SecondaryUsedPercent: 22, SecondaryResetsAt: week},
		{Time: h(5), PrimaryUsedPercent: 3, PrimaryResetsAt: r2, SecondaryUsedPercent: 22, SecondaryResetsAt: week},
		{Time: h(6), PrimaryUsedPercent: 3, PrimaryResetsAt: r2, SecondaryUsedPercent: 22, SecondaryResetsAt: week},
	} {
		q.Account = "a"
		l.RecordQuota(q)
	}
	l.RecordQuota(QuotaReading{Account: "b", Time: N.Add(-3 * time.Hour), PrimaryUsedPercent: 50, PrimaryResetsAt: N.Add(2 * time.Hour)})
	l.RecordQuota(QuotaReading{Account: "b", Time: N.Add(-2 * time.Hour), PrimaryUsedPercent: 53, PrimaryResetsAt: N.Add(2 * time.Hour)})

	rec := func(account string, at time.Time, tokens int64) {
		// Split into input and output: the burn counts both.
		l.Record(Row{Time: at, Account: account, Model: "gpt-5", Status: 200, InputTokens: tokens - tokens/5, OutputTokens: tokens / 5})
	}
	rec("a", h(0.5), 1000)
	rec("a", h(1.5), 600)
	rec("a", h(2.5), 400)
	rec("a", h(3.5), 2000)
	rec("a", h(4.5), 800)
	rec("a", h(5.5), 5000)
	rec("a", h(6.5), 100) // after the last reading
	rec("other", h(0.5), 1_000_000)
	rec("b", N.Add(-150*time.Minute), 3000)
	// The last hour, for the forecast's pace: a 1000, b 2000, c 7300, and an account outside
	// the pool.
	rec("a", N.Add(-30*time.Minute), 1000)
	rec("b", N.Add(-20*time.Minute), 2000)
	rec("c", N.Add(-10*time.Minute), 7300)
	rec("zz", N.Add(-5*time.Minute), 99999)
	rec("a", N.Add(-61*time.Minute), 12345) // just before the hour
	mustFlush(t, l)
	return l
}

func TestBurn(t *testing.T) {
	l := burnFixture(t)
	ctx := context.Background()
	b, err := l.Burn(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if !near(b.PrimaryTokensPerPercent, 560) || !near(b.PrimaryPercentSeen, 5) {
		t.Errorf("primary: %v tokens per 1%% over %v%%, want 560 over 5", b.PrimaryTokensPerPercent, b.PrimaryPercentSeen)
	}
	if !near(b.SecondaryTokensPerPercent, 2000) || !near(b.SecondaryPercentSeen, 2) {
		t.Errorf("secondary: %v tokens per 1%% over %v%%, want 2000 over 2", b.SecondaryTokensPerPercent, b.SecondaryPercentSeen)
	}
	B := burnNow.Add(-10 * time.Hour)
	if !b.Latest.Time.Equal(B.Add(6*time.Hour)) || b.Latest.PrimaryUsedPercent != 3 ||
		!b.Latest.PrimaryResetsAt.Equal(B.Add(9*time.Hour)) || b.Latest.SecondaryUsedPercent != 22 {
		t.Errorf("latest %+v", b.Latest)
	}
	if b, _ := l.Burn(ctx, "b"); !near(b.PrimaryTokensPerPercent, 1000) || b.SecondaryTokensPerPercent != 0 {
		t.Errorf("b: %+v", b)
	}
	if b, err := l.Burn(ctx, "c"); err != nil || b.PrimaryTokensPerPercent != 0 || !b.Latest.Time.IsZero() {
		t.Errorf("c (no readings): %+v %v", b, err)
	}
}

// A percent that falls inside one window ends the run: nothing across it is counted.
func TestBurnRateIgnoresFallsAndWindowChanges(t *testing.T) {
	rs := []reading{
		{at: 0, pUsed: 10, pReset: 1000},
		{at: 1, pUsed: 20, pReset: 1000}, // +10 for 100
		{at: 2, pUsed: 5, pReset: 1000},  // fell: 7 not counted
		{at: 3, pUsed: 6, pReset: 1000},  // +1 for 3
		{at: 4, pUsed: 9, pReset: 0},     // resets-at unknown: 50 not counted
		{at: 5, pUsed: 12, pReset: 0},    // unknown again: 11 not counted
	}
	tok, pct := burnRate(rs, []float64{100, 7, 3, 50, 11}, func(r reading) (float64, int64) { return r.pUsed, r.pReset })
	if tok != 103 || pct != 11 {
		t.Errorf("burnRate = %v tokens over %v%%, want 103 over 11", tok, pct)
	}
}

func TestForecast(t *testing.T) {
	l := burnFixture(t)
	ctx := context.Background()
	// a: its last window reset (at N-1h) after its last reading, so 100% left at 560 per 1%
	// = 56000; b: 47% left at 1000 = 47000; c: unknown. Pace over the last hour: a 1000 +
	// b 2000 + c 7300 = 10300 tokens. 103000 / 10300 = 10 hours.
	f, err := l.Forecast(ctx, []string{"a", "b", "c"}, burnNow)
	if err != nil {
		t.Fatal(err)
	}
	if f.TokensLastHour != 10300 || !near(f.CapacityTokens, 103000) {
		t.Errorf("pace %d, capacity %v", f.TokensLastHour, f.CapacityTokens)
	}
	if !f.RunsOut.Equal(burnNow.Add(10 * time.Hour)) {
		t.Errorf("runs out at %v, want %v", f.RunsOut, burnNow.Add(10*time.Hour))
	}
	if !slices.Equal(f.Known, []string{"a", "b"}) || !slices.Equal(f.Unknown, []string{"c"}) {
		t.Errorf("known %v unknown %v", f.Known, f.Unknown)
	}
	// a's window reset before now (its next reset is not read yet); b's resets at N+2h, before
	// the capacity runs out.
	if !f.NextReset.Equal(burnNow.Add(2 * time.Hour)) {
		t.Errorf("next reset %v, want %v", f.NextReset, burnNow.Add(2*time.Hour))
	}
	if until, past, ok := f.Lasts(burnNow); !ok || !past || !until.Equal(f.RunsOut) {
		t.Errorf("Lasts: %v %v %v, want past the reset", until, past, ok)
	}
	early := f
	early.NextReset = burnNow.Add(11 * time.Hour)
	if _, past, ok := early.Lasts(burnNow.Add(30 * time.Minute)); !ok || past {
		t.Errorf("Lasts before the reset: %v %v", past, ok)
	}
	for name, at := range map[string]time.Time{"an hour later": burnNow.Add(time.Hour), "once run out": burnNow.Add(10 * time.Hour)} {
		if _, _, ok := f.Lasts(at); ok {
			t.Errorf("%s the forecast still says something", name)
		}
	}

	// No accounts named: those with readings (a and b). Pace 3000: 103000/3000 h.
	f, err = l.Forecast(ctx, nil, burnNow)
	if err != nil {
		t.Fatal(err)
	}
	hours := 103000.0 / 3000
	want := burnNow.Add(time.Duration(hours * float64(time.Hour)))
	if f.TokensLastHour != 3000 || f.RunsOut.Sub(want).Abs() > time.Second {
		t.Errorf("all accounts: pace %d, runs out %v, want %v", f.TokensLastHour, f.RunsOut, want)
	}

	// No tokens in the last hour: unknown.
	if f, _ := l.Forecast(ctx, []string{"a", "b"}, burnNow.Add(24*time.Hour)); !f.RunsOut.IsZero() || f.TokensLastHour != 0 {
		t.Errorf("idle pool: %+v", f)
	}
	// Only accounts without a burn rate: unknown, whatever the pace.
	if f, _ := l.Forecast(ctx, []string{"c"}, burnNow); !f.RunsOut.IsZero() || f.TokensLastHour != 7300 {
		t.Errorf("unknown accounts: %+v", f)
	}
}
