package bench

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/proxy/pool"
)

// `bench pool` (issue 52): how much of a week of Codex use each routing strategy serves, run
// through the real pool (proxy/pool) on a virtual clock, against hindsight, the most any
// routing could have served knowing the whole week.
//
// The upstream is simulated. Each account has a weekly window, a five-hour window and a
// bucket of its own for the Spark model (metered as codex_bengalfox) with its own five-hour
// and weekly windows; capacities are in cost units (the figures use units of one thousandth).
// The windows run on a fixed cadence: a weekly window resets at its account's phase (the
// accounts were first used at different times, so their resets are spread over the week), and
// its five-hour windows follow one another from its start, the last one cut short by the weekly
// reset, so that each five-hour window lies inside one weekly window. (The real backend starts a
// five-hour window at the first use after the last one reset; a fixed cadence keeps the
// windows independent of the routing, which the hindsight ceiling needs.) The weekly window
// current when the week starts has been used in part already, about as much of it as has
// passed.
//
// Demand is conversations in working hours (09:00 to 18:00 on weekdays, more of them mid-morning
// and mid-afternoon), each a run of turns a minute or two apart whose costs are heavy-tailed
// (log-normal), some of them on the Spark model; the costs are scaled so that the week's demand
// is Load times the capacity the week holds.
//
// A strategy's run is the relay's way: the virtual clock reads every account's usage every
// proxy.QuotaInterval (the readings are as stale as the relay's), and each turn asks the pool
// for its candidates (the conversation is the session, so it keeps its account) and calls them
// in turn through Pool.Call. The simulated upstream serves a turn when the windows it draws
// from (the account's for the main model, the bucket's for Spark) have something left, as the
// backend does: it stops an account only once a window is spent. Else it answers 429
// usage_limit_reached with the reset of the spent window (resets_at), naming the bucket
// (x-codex-active-limit: codex_bengalfox) for a Spark limit, and the pool judges it and rests the
// account (or its bucket) while the turn moves on to the next candidate. A turn that runs over
// what its windows had left is served whole, but only what they had left counts as served: the
// rest is the backend's gift, which no routing can plan for and the ceiling leaves out too.

// PoolOptions configure Pool; zero values take the defaults.
type PoolOptions struct {
	Seed     uint64  // the week's randomness (default 1)
	Accounts int     // accounts in the pool (default 6)
	Days     int     // days simulated, from a Monday (default 7)
	Load     float64 // the week's demand over the capacity it holds (default 1)
	// Spark is the share of conversations on the Spark model (default 0.15; negative: none).
	Spark float64
}

// PoolResult is what `codexrelay bench pool --json` prints.
type PoolResult struct {
	Scenario   PoolScenario   `json:"scenario"`
	Strategies []PoolStrategy `json:"strategies"`
}

// PoolScenario is the simulated week; costs are in units (an account's weekly window holds
// WeeklyUnits).
type PoolScenario struct {
	Seed          uint64  `json:"seed"`
	Accounts      int     `json:"accounts"`
	Days          int     `json:"days"`
	WeeklyUnits   float64 `json:"weekly_units"`
	FiveHourMin   float64 `json:"five_hour_min_units"` // the smallest account's five-hour window
	FiveHourMax   float64 `json:"five_hour_max_units"`
	SparkUnits    float64 `json:"spark_weekly_units"` // the Spark bucket's weekly window
	Conversations int     `json:"conversations"`
	Turns         int     `json:"turns"`
	SparkTurns    int     `json:"spark_turns"`
	Demand        float64 `json:"demand_units"`
	// Capacity is what the weekly windows (main and Spark) hold within the days: what was left of
	// the current ones when the week started, and the whole of those that begin in it.
	Capacity float64 `json:"capacity_units"`
}

// PoolStrategy is one strategy's week. Hindsight routes no conversation: its client limits and
// moves are 0.
type PoolStrategy struct {
	Name string `json:"name"`
	// ServedShare is the cost served over the cost asked for.
	ServedShare float64 `json:"served_share"`
	// ExpiredUnusedShare is what the weekly windows (main and Spark) that reset within the days
	// had left when they reset, over what they held.
	ExpiredUnusedShare float64 `json:"expired_unused_share"`
	// ClientLimits counts the turns no account served while one had something left in the
	// windows the turn draws from (the simulator's truth): limits the client saw needlessly.
	ClientLimits int `json:"client_limits"`
	// BucketLimits are the client limits of turns on a bucket's model (Spark): the pool rests a
	// whole account whose own limit is reached, and so keeps them off an account whose bucket
	// still has quota.
	BucketLimits int `json:"client_limits_bucket"`
	// Moves counts the turns served by another account than their conversation's previous turn.
	Moves int `json:"moves"`
	// Limited counts the turns no account served.
	Limited int `json:"limited"`
}

// StrategyHindsight is the ceiling Pool compares the strategies with.
const StrategyHindsight = "hindsight"

const (
	simMainModel  = "gpt-5.3-codex"
	simSparkModel = "gpt-5.3-codex-spark"
	simSparkName  = "GPT-5.3-Codex-Spark" // its limit_name in /wham/usage
	simBucket     = "codex_bengalfox"
	simUnit       = 1000 // the simulation's costs are in thousandths of a unit
	simWeeklyCap  = 1000 * simUnit
	simSparkShare = 0.15 // of the weekly window, the Spark bucket's; and of the conversations, Spark's
	simWeek       = 7 * 24 * time.Hour
	simFiveHours  = 5 * time.Hour
)

// simWindow is one window of an account, over the simulated days: its instances and capacity.
type simWindow struct {
	seconds int64       // its length, as the readings give it
	cap     int64       // what each instance holds
	first   time.Time   // when instance 0 began (before the days)
	ends    []time.Time // instance i is [ends[i-1], ends[i]); the last ends at or after the days
	used0   int64       // what instance 0 had used when the days began
	outer   *simWindow  // the window whose instances hold this one's (a five-hour window's weekly); nil for a weekly one
}

// at is the instance current at t.
func (w *simWindow) at(t time.Time) int {
	return sort.Search(len(w.ends), func(i int) bool { return w.ends[i].After(t) })
}

func (w *simWindow) start(i int) time.Time {
	if i == 0 {
		return w.first
	}
	return w.ends[i-1]
}

// weeklyWindow is a weekly window whose instance current at start resets after phase, with
// instances until the one current at end.
func weeklyWindow(capacity int64, phase time.Duration, start, end time.Time) *simWindow {
	e := start.Add(phase)
	w := &simWindow{seconds: int64(simWeek / time.Second), cap: capacity, first: e.Add(-simWeek)}
	for {
		w.ends = append(w.ends, e)
		if !e.Before(end) {
			return w
		}
		e = e.Add(simWeek)
	}
}

// fiveHourWindow is a five-hour window inside week: five-hour instances from each weekly
// instance's start, the last one ending with it.
func fiveHourWindow(capacity int64, week *simWindow) *simWindow {
	w := &simWindow{seconds: int64(simFiveHours / time.Second), cap: capacity, first: week.first, outer: week}
	for i, e := range week.ends {
		for b := week.start(i).Add(simFiveHours); b.Before(e); b = b.Add(simFiveHours) {
			w.ends = append(w.ends, b)
		}
		w.ends = append(w.ends, e)
	}
	return w
}

// simAccount is an account of the simulation: its main windows and its Spark bucket's (nil:
// it has no such window).
type simAccount struct {
	name                 string
	five, week           *simWindow
	sparkFive, sparkWeek *simWindow
}

// windows are the windows a turn draws from: the bucket's for Spark (when it has one), else the
// account's.
func (a *simAccount) windows(spark bool) []*simWindow {
	ws := []*simWindow{a.five, a.week}
	if spark && a.sparkWeek != nil {
		ws = []*simWindow{a.sparkFive, a.sparkWeek}
	}
	return slices.DeleteFunc(ws, func(w *simWindow) bool { return w == nil })
}

func (a *simAccount) all() []*simWindow {
	return slices.DeleteFunc([]*simWindow{a.five, a.week, a.sparkFive, a.sparkWeek}, func(w *simWindow) bool { return w == nil })
}

// simTurn is one turn of a conversation.
type simTurn struct {
	at    time.Time
	conv  int
	spark bool
	cost  int64
}

// simScenario is a simulated week: the accounts in list order, and the turns in time order.
type simScenario struct {
	start, end    time.Time
	accounts      []*simAccount
	turns         []simTurn
	conversations int
}

// newPoolScenario makes the week opt describes.
func newPoolScenario(opt PoolOptions) (*simScenario, PoolScenario) {
	r := rand.New(rand.NewPCG(opt.Seed, 52))
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC) // a Monday
	sc := &simScenario{start: start, end: start.AddDate(0, 0, opt.Days)}
	desc := PoolScenario{Seed: opt.Seed, Accounts: opt.Accounts, Days: opt.Days, WeeklyUnits: simWeeklyCap / simUnit,
		SparkUnits: simWeeklyCap * simSparkShare / simUnit, FiveHourMin: math.Inf(1)}
	weekSeconds := int64(simWeek / time.Second)
	// weekly is a weekly window resetting at a random whole second of the coming week, used so far
	// at an even pace of half to all of what it holds.
	weekly := func(capacity int64) *simWindow {
		w := weeklyWindow(capacity, time.Duration(1+r.Int64N(weekSeconds))*time.Second, sc.start, sc.end)
		passed := sc.start.Sub(w.first).Seconds() / simWeek.Seconds()
		w.used0 = int64(float64(capacity) * passed * (0.5 + 0.5*r.Float64()))
		return w
	}
	for i := range opt.Accounts {
		a := &simAccount{name: fmt.Sprintf("account-%d", i+1)}
		ratio := 1.0/8 + r.Float64()*(1.0/5-1.0/8) // the five hours hold 1/8 to 1/5 of the week
		a.week = weekly(simWeeklyCap)
		a.five = fiveHourWindow(int64(ratio*simWeeklyCap), a.week)
		a.sparkWeek = weekly(int64(simSparkShare * simWeeklyCap))
		a.sparkFive = fiveHourWindow(int64(ratio*simSparkShare*simWeeklyCap), a.sparkWeek)
		desc.FiveHourMin = min(desc.FiveHourMin, float64(a.five.cap)/simUnit)
		desc.FiveHourMax = max(desc.FiveHourMax, float64(a.five.cap)/simUnit)
		sc.accounts = append(sc.accounts, a)
	}

	// Conversations: about eight a working day per account, starting at an hour weighted to
	// mid-morning and mid-afternoon; each of 1 to 150 turns (20 on average) a minute or two apart.
	hourWeights := map[int]float64{9: 2, 10: 4, 11: 4, 12: 2, 13: 1, 14: 3, 15: 4, 16: 4, 17: 2}
	hours := slices.Sorted(maps.Keys(hourWeights))
	var weights float64
	for _, h := range hours {
		weights += hourWeights[h]
	}
	raw := []float64{}
	for d := range opt.Days {
		day := sc.start.AddDate(0, 0, d)
		if wd := day.Weekday(); wd == time.Saturday || wd == time.Sunday {
			continue
		}
		for range poisson(r, 8*float64(opt.Accounts)) {
			pick, h := r.Float64()*weights, hours[len(hours)-1]
			for _, c := range hours {
				if pick -= hourWeights[c]; pick < 0 {
					h = c
					break
				}
			}
			t := day.Add(time.Duration(h)*time.Hour + time.Duration(r.Int64N(3600))*time.Second)
			spark := r.Float64() < opt.Spark
			for range min(1+int(r.ExpFloat64()*19), 150) {
				if t.Before(sc.end) {
					sc.turns = append(sc.turns, simTurn{at: t, conv: sc.conversations, spark: spark})
					raw = append(raw, min(math.Exp(1.1*r.NormFloat64()), 40))
				}
				t = t.Add(time.Duration(20+int64(r.ExpFloat64()*100)) * time.Second)
			}
			sc.conversations++
		}
	}

	for _, t := range sc.turns {
		if t.spark {
			desc.SparkTurns++
		}
	}
	// The costs, scaled: the week asks for Load times its capacity.
	var capacity int64
	for _, a := range sc.accounts {
		capacity += int64(len(a.week.ends))*a.week.cap - a.week.used0
		if desc.SparkTurns > 0 {
			capacity += int64(len(a.sparkWeek.ends))*a.sparkWeek.cap - a.sparkWeek.used0
		}
	}
	var total float64
	for _, c := range raw {
		total += c
	}
	k := opt.Load * float64(capacity) / max(total, 1)
	for i := range sc.turns {
		sc.turns[i].cost = max(1, int64(math.Round(raw[i]*k)))
	}
	slices.SortStableFunc(sc.turns, func(a, b simTurn) int { return a.at.Compare(b.at) })

	desc.Conversations, desc.Turns, desc.Capacity = sc.conversations, len(sc.turns), float64(capacity)/simUnit
	for _, t := range sc.turns {
		desc.Demand += float64(t.cost) / simUnit
	}
	if math.IsInf(desc.FiveHourMin, 1) {
		desc.FiveHourMin = 0
	}
	return sc, desc
}

// poisson draws a Poisson count of mean lambda.
func poisson(r *rand.Rand, lambda float64) int {
	n := 0
	for t := r.ExpFloat64(); t < lambda; t += r.ExpFloat64() {
		n++
	}
	return n
}

// Pool simulates the week opt describes under each strategy, and its hindsight ceiling.
func Pool(opt PoolOptions) (PoolResult, error) {
	if opt.Seed == 0 {
		opt.Seed = 1
	}
	if opt.Accounts <= 0 {
		opt.Accounts = 6
	}
	if opt.Days <= 0 {
		opt.Days = 7
	}
	if opt.Load <= 0 {
		opt.Load = 1
	}
	if opt.Spark == 0 {
		opt.Spark = simSparkShare
	}
	sc, desc := newPoolScenario(opt)
	res := PoolResult{Scenario: desc}
	for _, s := range pool.Strategies {
		run, err := sc.run(s)
		if err != nil {
			return res, err
		}
		res.Strategies = append(res.Strategies, run.result())
	}
	res.Strategies = append(res.Strategies, sc.hindsight().result())
	return res, nil
}

// simRun is one strategy's week, in the simulation's thousandths.
type simRun struct {
	name                  string
	served, demand        int64
	expired, expiredOf    int64
	clientLimits, limited int
	bucketLimits          int
	moves                 int
	servedBy              map[string]int // turns each account served
}

func (r simRun) result() PoolStrategy {
	s := PoolStrategy{Name: r.name, ClientLimits: r.clientLimits, BucketLimits: r.bucketLimits, Moves: r.moves, Limited: r.limited}
	if r.demand > 0 {
		s.ServedShare = float64(r.served) / float64(r.demand)
	}
	if r.expiredOf > 0 {
		s.ExpiredUnusedShare = float64(r.expired) / float64(r.expiredOf)
	}
	return s
}

// expiredUnused adds to run what the weekly windows that reset within the days had left, used
// being what each instance used.
func (sc *simScenario) expiredUnused(run *simRun, used func(w *simWindow, i int) int64) {
	for _, a := range sc.accounts {
		for _, w := range a.all() {
			if w.outer != nil {
				continue // five-hour windows: they reset every five hours, night or day
			}
			for i, e := range w.ends {
				if e.After(sc.start) && !e.After(sc.end) {
					run.expired += w.cap - used(w, i)
					run.expiredOf += w.cap
				}
			}
		}
	}
}

// run simulates the week with the pool routing by strategy.
func (sc *simScenario) run(strategy string) (simRun, error) {
	run := simRun{name: strategy, servedBy: map[string]int{}}
	clock := sc.start
	p := pool.New(nil, func() time.Time { return clock }, pool.Breaker{})
	accounts := make([]pool.Account, len(sc.accounts))
	byName := map[string]*simAccount{}
	used := map[*simWindow][]int64{}
	for i, a := range sc.accounts {
		accounts[i] = pool.Account{Name: a.name, Kind: pool.KindChatGPT, BaseURL: pool.DefaultChatGPTBaseURL,
			Credentials: pool.Static{Token: "simulated", AccountID: "workspace-" + a.name}}
		byName[a.name] = a
		for _, w := range a.all() {
			used[w] = make([]int64, len(w.ends))
			used[w][0] = w.used0
		}
	}
	p.Set(accounts)
	p.SetStrategy(strategy)

	// room is what a turn may draw from a's windows now, and when the spent ones reset.
	room := func(a *simAccount, spark bool) (left int64, resets time.Time) {
		left = math.MaxInt64
		for _, w := range a.windows(spark) {
			i := w.at(clock)
			l := w.cap - used[w][i]
			if l <= 0 && w.ends[i].After(resets) {
				resets = w.ends[i]
			}
			left = min(left, l)
		}
		return left, resets
	}
	// send is the upstream: it serves t on a when its windows have something left, and
	// reports what that took of them; else it says 429.
	send := func(a *simAccount, t simTurn) (int64, *pool.Said) {
		left, resets := room(a, t.spark)
		if left <= 0 {
			said := &pool.Said{Status: 429, Code: "usage_limit_reached", Msg: "The usage limit has been reached",
				ResetsAt: resets.Unix(), Where: "HTTP 429", Bucket: "codex"}
			if t.spark && a.sparkWeek != nil {
				said.Bucket = simBucket
			}
			return 0, said
		}
		took := min(t.cost, left)
		for _, w := range a.windows(t.spark) {
			used[w][w.at(clock)] += took
		}
		return took, nil
	}
	read := func() {
		for _, m := range p.List() {
			p.SetQuota(m, sc.reading(byName[m.Name], used, clock))
		}
	}

	ctx := context.Background()
	all := func(*pool.Member) bool { return true }
	last := make([]*simAccount, sc.conversations)
	sessions := make([]string, sc.conversations)
	for i := range sessions {
		sessions[i] = fmt.Sprintf("conversation-%d", i)
	}
	next := sc.start
	for _, t := range sc.turns {
		for !next.After(t.at) {
			clock = next
			read()
			next = next.Add(proxy.QuotaInterval)
		}
		clock = t.at
		run.demand += t.cost
		model := simMainModel
		if t.spark {
			model = simSparkModel
		}
		var by *simAccount
		for _, m := range p.Candidates(model, sessions[t.conv], clock, all) {
			a := byName[m.Name]
			var took int64
			out := p.Call(ctx, m, model, func(pool.Credential) *pool.Said {
				var said *pool.Said
				took, said = send(a, t)
				return said
			})
			if out.Err != nil {
				return run, out.Err
			}
			if out.Judgment == nil {
				p.Served(m, sessions[t.conv])
				by, run.served = a, run.served+took
				break
			}
			if out.Judgment.Class != pool.Limited {
				return run, fmt.Errorf("bench pool: %s judged a limit as %v: %s", m.Name, out.Judgment.Class, out.Judgment.Reason)
			}
		}
		if by == nil {
			run.limited++
			if slices.ContainsFunc(sc.accounts, func(a *simAccount) bool { l, _ := room(a, t.spark); return l > 0 }) {
				run.clientLimits++
				if t.spark {
					run.bucketLimits++
				}
			}
			continue
		}
		run.servedBy[by.name]++
		if prev := last[t.conv]; prev != nil && prev != by {
			run.moves++
		}
		last[t.conv] = by
	}
	sc.expiredUnused(&run, func(w *simWindow, i int) int64 { return used[w][i] })
	return run, nil
}

// reading is a's usage as /wham/usage would give it at now.
func (sc *simScenario) reading(a *simAccount, used map[*simWindow][]int64, now time.Time) *pool.Quota {
	window := func(w *simWindow) (percent float64, resets time.Time, seconds int64) {
		if w == nil {
			return 0, time.Time{}, 0
		}
		i := w.at(now)
		return 100 * float64(used[w][i]) / float64(w.cap), w.ends[i], w.seconds
	}
	q := &pool.Quota{FetchedAt: now, PlanType: "plus"}
	q.PrimaryUsedPercent, q.PrimaryResetsAt, q.PrimaryWindowSeconds = window(a.five)
	q.SecondaryUsedPercent, q.SecondaryResetsAt, q.SecondaryWindowSeconds = window(a.week)
	if a.sparkWeek != nil {
		b := pool.AdditionalQuota{Name: simSparkName, Feature: simBucket}
		b.PrimaryUsedPercent, b.PrimaryResetsAt, b.PrimaryWindowSeconds = window(a.sparkFive)
		b.SecondaryUsedPercent, b.SecondaryResetsAt, b.SecondaryWindowSeconds = window(a.sparkWeek)
		q.Additional = []pool.AdditionalQuota{b}
	}
	return q
}

// hindsight is the most of the week's demand any routing could serve, knowing the whole week:
// a maximum flow from the turns, through the windows that could serve each, to the windows'
// capacity.
//
// Each turn is served when it comes or not at all, by one account, drawing the same amount from
// the windows it draws from there (its five-hour window and the weekly window that holds it,
// or the Spark bucket's). The network: the source gives each stretch of time between two window
// resets (of any account), for each of main and Spark, the cost of its turns; the stretch gives
// to the innermost window instance current in it on every account (uncapped); a five-hour
// instance gives to its weekly instance at most what it holds; a weekly instance to the sink at
// most what it had left. Turns of one stretch share their windows on every account, so a
// stretch stands for its turns. Whatever a routing serves is a flow of this network (each
// turn's amount along its account's path keeps within every window), so the maximum flow is a
// ceiling on every strategy; it lets a turn be split between accounts, which no routing can,
// and turns are small beside the windows, so the ceiling is close to what can be reached.
func (sc *simScenario) hindsight() simRun {
	run := simRun{name: StrategyHindsight}
	var bounds []time.Time
	for _, a := range sc.accounts {
		for _, w := range a.all() {
			bounds = append(bounds, w.ends...)
		}
	}
	slices.SortFunc(bounds, time.Time.Compare)
	bounds = slices.Compact(bounds)

	g := newFlow()
	const source, sink = 0, 1
	type instance struct {
		w *simWindow
		i int
	}
	nodes := map[instance]int{}
	toSink := map[instance]int{} // a weekly instance's edge to the sink
	var node func(w *simWindow, i int) int
	node = func(w *simWindow, i int) int {
		k := instance{w, i}
		if n, ok := nodes[k]; ok {
			return n
		}
		n := g.node()
		nodes[k] = n
		if w.outer != nil {
			g.edge(n, node(w.outer, w.outer.at(w.start(i))), w.cap)
		} else {
			left := w.cap
			if i == 0 {
				left -= w.used0
			}
			toSink[k] = g.edge(n, sink, left)
		}
		return n
	}
	type stretch struct {
		index int
		spark bool
	}
	stretches := map[stretch]int{} // its edge from the source
	for _, t := range sc.turns {
		run.demand += t.cost
		k := stretch{sort.Search(len(bounds), func(i int) bool { return bounds[i].After(t.at) }), t.spark}
		e, ok := stretches[k]
		if !ok {
			n := g.node()
			e = g.edge(source, n, 0)
			stretches[k] = e
			for _, a := range sc.accounts {
				w := a.windows(t.spark)[0]
				g.edge(n, node(w, w.at(t.at)), math.MaxInt64/4)
			}
		}
		g.cap[e] += t.cost
	}
	run.served = g.max(source, sink)
	sc.expiredUnused(&run, func(w *simWindow, i int) int64 {
		var u int64
		if i == 0 {
			u = w.used0
		}
		if e, ok := toSink[instance{w, i}]; ok {
			u += g.flow[e]
		}
		return u
	})
	return run
}

// flow is a flow network (Dinic's algorithm).
type flow struct {
	adj   [][]int // each node's edges
	to    []int
	cap   []int64 // an edge's capacity; its reverse is e^1
	flow  []int64
	level []int
	next  []int
}

func newFlow() *flow {
	g := &flow{}
	g.node()
	g.node()
	return g
}

func (g *flow) node() int {
	g.adj = append(g.adj, nil)
	return len(g.adj) - 1
}

// edge adds an edge from u to v and its reverse, and returns the edge.
func (g *flow) edge(u, v int, c int64) int {
	e := len(g.to)
	g.to, g.cap, g.flow = append(g.to, v, u), append(g.cap, c, 0), append(g.flow, 0, 0)
	g.adj[u], g.adj[v] = append(g.adj[u], e), append(g.adj[v], e+1)
	return e
}

// max pushes the maximum flow from s to t and returns it.
func (g *flow) max(s, t int) int64 {
	var total int64
	for {
		g.level = slices.Repeat([]int{-1}, len(g.adj))
		g.level[s] = 0
		queue := []int{s}
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			for _, e := range g.adj[u] {
				if v := g.to[e]; g.level[v] < 0 && g.cap[e]-g.flow[e] > 0 {
					g.level[v] = g.level[u] + 1
					queue = append(queue, v)
				}
			}
		}
		if g.level[t] < 0 {
			return total
		}
		g.next = make([]int, len(g.adj))
		for {
			f := g.push(s, t, math.MaxInt64)
			if f == 0 {
				break
			}
			total += f
		}
	}
}

func (g *flow) push(u, t int, limit int64) int64 {
	if u == t {
		return limit
	}
	for ; g.next[u] < len(g.adj[u]); g.next[u]++ {
		e := g.adj[u][g.next[u]]
		v := g.to[e]
		if g.level[v] != g.level[u]+1 || g.cap[e]-g.flow[e] <= 0 {
			continue
		}
		if f := g.push(v, t, min(limit, g.cap[e]-g.flow[e])); f > 0 {
			g.flow[e] += f
			g.flow[e^1] -= f
			return f
		}
	}
	return 0
}

// strategy is the named strategy's figures (the zero value when it did not run).
func (r PoolResult) strategy(name string) PoolStrategy {
	i := slices.IndexFunc(r.Strategies, func(s PoolStrategy) bool { return s.Name == name })
	if i < 0 {
		return PoolStrategy{}
	}
	return r.Strategies[i]
}
