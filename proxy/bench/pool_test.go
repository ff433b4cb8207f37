package bench

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy/pool"
)

// A small week: the JSON shape, hindsight a ceiling, no needless client limit, reset-first no
// worse than priority, and the same figures for the same seed.
func TestPoolSimulatesAWeekPerStrategy(t *testing.T) {
	opt := PoolOptions{Seed: 7, Accounts: 4, Days: 3, Load: 0.8, Spark: -1}
	r, err := Pool(opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		Strategies []map[string]any `json:"strategies"`
	}
	if err := json.Unmarshal(b, &shape); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range shape.Strategies {
		for _, k := range []string{"name", "served_share", "expired_unused_share", "client_limits", "moves"} {
			if _, ok := s[k]; !ok {
				t.Errorf("strategy %v has no %q", s["name"], k)
			}
		}
		names = append(names, s["name"].(string))
	}
	if want := append(slices.Clone(pool.Strategies), StrategyHindsight); !slices.Equal(names, want) {
		t.Errorf("strategies %v, want %v", names, want)
	}
	if r.Scenario.Turns == 0 || r.Scenario.Demand <= 0 {
		t.Fatalf("no demand: %+v", r.Scenario)
	}
	h := r.strategy(StrategyHindsight)
	for _, s := range r.Strategies {
		if s.ServedShare > h.ServedShare+1e-9 {
			t.Errorf("%s serves %.4f, above hindsight's %.4f", s.Name, s.ServedShare, h.ServedShare)
		}
		if s.ClientLimits != 0 {
			t.Errorf("%s: %d client limits while an account had quota", s.Name, s.ClientLimits)
		}
	}
	if rf, pr := r.strategy(pool.StrategyResetFirst), r.strategy(pool.StrategyPriority); rf.ServedShare < pr.ServedShare {
		t.Errorf("reset-first serves %.4f, below priority's %.4f", rf.ServedShare, pr.ServedShare)
	}
	again, err := Pool(opt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, again) {
		t.Errorf("seed %d gave two weeks:\n%+v\n%+v", opt.Seed, r, again)
	}
}

// With Spark turns too, no client sees a limit while an account had quota for its turn: an
// account resting for its own limit still serves Spark from its bucket, a limit apart.
func TestPoolNoClientLimitWhileCapacityRemained(t *testing.T) {
	r, err := Pool(PoolOptions{Seed: 3, Accounts: 4, Days: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Strategies {
		if s.ClientLimits != 0 {
			t.Errorf("%s: %d client limits while an account had quota, %d of them Spark turns", s.Name, s.ClientLimits, s.BucketLimits)
		}
	}
}

// Issue 52's case: two accounts of 4 requests a window, A's ending in 7 s and B's in 45 s, B
// listed first, 6 requests. Priority serves B 4 and A 2, and A loses 2 at its reset;
// reset-first serves A 4 first, then B 2, and A loses nothing.
func TestPoolResetFirstSpendsTheWindowThatEndsFirst(t *testing.T) {
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	sc := &simScenario{start: start, end: start.Add(10 * time.Second), conversations: 6}
	b := &simAccount{name: "B", week: weeklyWindow(4*simUnit, 45*time.Second, sc.start, sc.end)}
	a := &simAccount{name: "A", week: weeklyWindow(4*simUnit, 7*time.Second, sc.start, sc.end)}
	sc.accounts = []*simAccount{b, a}
	for i := range 6 {
		sc.turns = append(sc.turns, simTurn{at: start.Add(time.Duration(i) * time.Second), conv: i, cost: simUnit})
	}
	for _, c := range []struct {
		strategy string
		servedBy map[string]int
		lost     int64
	}{
		{pool.StrategyPriority, map[string]int{"B": 4, "A": 2}, 2 * simUnit},
		{pool.StrategyResetFirst, map[string]int{"A": 4, "B": 2}, 0},
	} {
		run, err := sc.run(c.strategy)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(run.servedBy, c.servedBy) || run.expired != c.lost || run.served != 6*simUnit || run.clientLimits != 0 {
			t.Errorf("%s: served %v (%d), lost %d at A's reset, %d client limits; want %v (6 units), lost %d",
				c.strategy, run.servedBy, run.served, run.expired, run.clientLimits, c.servedBy, c.lost)
		}
	}
	if h := sc.hindsight(); h.served != 6*simUnit {
		t.Errorf("hindsight serves %d, want %d", h.served, 6*simUnit)
	}
}
