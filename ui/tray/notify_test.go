package tray

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// pool is a snapshot builder for the notifier's tests: two ChatGPT accounts and an API key,
// all ready, with some five-hour usage.
type pool struct{ s proxy.Snapshot }

func newPool() *pool {
	q := func(used float64) *proxy.Quota {
		return &proxy.Quota{PrimaryUsedPercent: used, PrimaryResetsAt: uitest.Now.Add(2 * time.Hour),
			SecondaryUsedPercent: 40, SecondaryResetsAt: uitest.Now.Add(72 * time.Hour)}
	}
	return &pool{proxy.Snapshot{Accounts: []proxy.AccountStats{
		{Name: "a", Kind: proxy.KindChatGPT, State: proxy.StateReady, Quota: q(30)},
		{Name: "b", Kind: proxy.KindChatGPT, State: proxy.StateReady, Quota: q(50)},
		{Name: "key", Kind: proxy.KindOpenAI, State: proxy.StateReady},
	}}}
}

// snap is a deep enough copy to feed the notifier.
func (p *pool) snap() proxy.Snapshot {
	s := p.s
	s.Accounts = slices.Clone(p.s.Accounts)
	for i, a := range s.Accounts {
		if a.Quota != nil {
			q := *a.Quota
			s.Accounts[i].Quota = &q
		}
	}
	return s
}

func (p *pool) rest(name, reason string, until time.Time) {
	for i := range p.s.Accounts {
		if p.s.Accounts[i].Name == name {
			p.s.Accounts[i].State, p.s.Accounts[i].CooldownReason, p.s.Accounts[i].CooldownUntil = proxy.StateCooldown, reason, &until
		}
	}
}

func (p *pool) set(name, state string) {
	for i := range p.s.Accounts {
		if p.s.Accounts[i].Name == name {
			p.s.Accounts[i].State, p.s.Accounts[i].CooldownReason, p.s.Accounts[i].CooldownUntil = state, "", nil
		}
	}
}

// feed gives the notifier the pool's snapshot at now and returns the kinds and titles it sent.
func feed(n *notifier, p *pool, now time.Time) []notice {
	return n.next(p.snap(), now, 20)
}

func kinds(ns []notice) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.kind)
	}
	return out
}

// newWindow starts a new five-hour window for name: its quota resets later than before.
func (p *pool) newWindow(name string, resets time.Time) {
	for i := range p.s.Accounts {
		if p.s.Accounts[i].Name == name && p.s.Accounts[i].Quota != nil {
			q := *p.s.Accounts[i].Quota
			q.PrimaryResetsAt = resets
			p.s.Accounts[i].Quota = &q
		}
	}
}

func TestNotifierFiresEachKindOncePerWindow(t *testing.T) {
	p := newPool()
	n := newNotifier()
	now := uitest.Now
	step := func(want ...string) []notice {
		t.Helper()
		now = now.Add(time.Second)
		got := feed(n, p, now)
		if !slices.Equal(kinds(got), want) {
			t.Fatalf("at %s: sent %v (%v), want %v", now.Format("15:04:05"), kinds(got), got, want)
		}
		// The next identical snapshot sends nothing.
		now = now.Add(time.Second)
		if again := feed(n, p, now); len(again) != 0 {
			t.Fatalf("the same snapshot again sent %v", again)
		}
		return got
	}

	// The first snapshot sets the baseline, even with an account needing a sign-in.
	p.set("key", proxy.StateNeedsLogin)
	step()
	p.set("key", proxy.StateReady)
	step()

	// Needs a sign-in: once per window, however often the account leaves and comes back.
	p.set("b", proxy.StateNeedsLogin)
	got := step(app.NotifyNeedsLogin)
	if got[0].title != "b needs a new sign-in" {
		t.Errorf("title %q", got[0].title)
	}
	p.set("key", proxy.StateNeedsLogin)
	if got := step(app.NotifyNeedsLogin); got[0].title != "The key of key was rejected" {
		t.Errorf("title %q", got[0].title)
	}
	p.set("b", proxy.StateReady)
	p.set("key", proxy.StateReady)
	step()
	p.set("b", proxy.StateNeedsLogin)
	step() // left and came back in the same window: told already
	p.set("b", proxy.StateReady)
	step()
	p.newWindow("b", uitest.Now.Add(7*time.Hour)) // b's next five-hour window
	p.set("b", proxy.StateNeedsLogin)
	step(app.NotifyNeedsLogin)
	p.set("b", proxy.StateReady)
	step()

	// Limit: once per window, with the clock time the rest ends; a longer rest is the same rest.
	until := uitest.Now.Add(4 * time.Minute)
	p.rest("a", proxy.CooldownRateLimit, until)
	got = step(app.NotifyLimit)
	if got[0].body != "a rests until 14:36; the relay sends its requests to the other accounts meanwhile." {
		t.Errorf("limit body %q", got[0].body)
	}
	p.rest("a", proxy.CooldownRateLimit, until.Add(time.Minute))
	step()
	p.set("a", proxy.StateReady)
	step()
	p.rest("a", proxy.CooldownRateLimit, until.Add(3*time.Minute)) // another rest, the same window
	step()
	p.set("a", proxy.StateReady)
	step()
	p.rest("a", proxy.CooldownFailing, until) // the breaker is not a limit
	step()
	p.set("a", proxy.StateReady)
	step()

	// Every account resting: once, naming the first back; the limit and the rejected key in
	// it were told about in this window already.
	p.rest("a", proxy.CooldownRateLimit, uitest.Now.Add(10*time.Minute))
	p.rest("b", proxy.CooldownFailing, uitest.Now.Add(3*time.Minute))
	p.set("key", proxy.StateNeedsLogin)
	got = step(app.NotifyAllResting)
	if got[0].body != "No account can take a request now. The first back is b, at 14:35." {
		t.Errorf("all resting body %q", got[0].body)
	}
	p.set("b", proxy.StateDisabled) // still nobody ready: no new message
	step()
	p.set("b", proxy.StateReady)
	p.set("a", proxy.StateReady)
	p.set("key", proxy.StateReady)
	step()
	p.rest("a", proxy.CooldownRateLimit, uitest.Now.Add(10*time.Minute))
	p.rest("b", proxy.CooldownFailing, uitest.Now.Add(3*time.Minute))
	step() // every account resting again, in the same windows
	p.set("a", proxy.StateReady)
	p.set("b", proxy.StateReady)
	step()
}

// A state that flaps (ready, resting, ready, resting…) within one window sends one notice of
// each kind; the next window may send one more.
func TestNotifierFlappingStateSendsOneNotice(t *testing.T) {
	p := newPool()
	n := newNotifier()
	now := uitest.Now
	feed(n, p, now)
	var sent []notice
	flap := func(times int) {
		for range times {
			now = now.Add(20 * time.Second)
			p.rest("a", proxy.CooldownRateLimit, now.Add(time.Minute))
			p.rest("b", proxy.CooldownFailing, now.Add(time.Minute))
			p.set("key", proxy.StateNeedsLogin)
			sent = append(sent, feed(n, p, now)...)
			now = now.Add(20 * time.Second)
			p.set("a", proxy.StateReady)
			p.set("b", proxy.StateReady)
			p.set("key", proxy.StateReady)
			sent = append(sent, feed(n, p, now)...)
		}
	}
	flap(10)
	want := []string{app.NotifyLimit, app.NotifyNeedsLogin, app.NotifyAllResting}
	if !slices.Equal(kinds(sent), want) {
		t.Fatalf("ten flaps in one window sent %v, want %v", kinds(sent), want)
	}
	// a's next window: its limit may be told again, once; the pool's windows changed with it.
	sent = nil
	p.newWindow("a", uitest.Now.Add(7*time.Hour))
	flap(5)
	if want := []string{app.NotifyLimit, app.NotifyAllResting}; !slices.Equal(kinds(sent), want) {
		t.Fatalf("five flaps in a's next window sent %v, want %v", kinds(sent), want)
	}
}

// A window reset is told only for a window in which the account had reached its limit.
func TestNotifierWindowReset(t *testing.T) {
	p := newPool()
	n := newNotifier()
	now := uitest.Now
	a := &p.s.Accounts[0]
	feed(n, p, now)
	a.Quota.PrimaryUsedPercent = 92
	if got := feed(n, p, now.Add(time.Minute)); len(got) != 0 {
		t.Fatalf("usage going up sent %v", got)
	}
	// The window resets without a's having reached its limit: nothing to tell.
	now = a.Quota.PrimaryResetsAt.Add(time.Second)
	a.Quota.PrimaryUsedPercent, a.Quota.PrimaryResetsAt = 0, now.Add(5*time.Hour)
	if got := feed(n, p, now); len(got) != 0 {
		t.Fatalf("a reset after 92%% sent %v", got)
	}

	// In the next window a reaches its limit and rests until the window ends.
	end := a.Quota.PrimaryResetsAt
	a.Quota.PrimaryUsedPercent = 100
	p.rest("a", proxy.CooldownRateLimit, end)
	if got := feed(n, p, now.Add(time.Minute)); !slices.Equal(kinds(got), []string{app.NotifyLimit}) {
		t.Fatalf("the limit sent %v", got)
	}
	// The reset time passes; the old figures stay until the quota is read again: nothing yet.
	now = end.Add(time.Second)
	p.set("a", proxy.StateReady)
	if got := feed(n, p, now); len(got) != 0 {
		t.Fatalf("a stale quota sent %v", got)
	}
	// The new reading: once.
	a.Quota.PrimaryUsedPercent, a.Quota.PrimaryResetsAt = 0, now.Add(5*time.Hour)
	got := feed(n, p, now.Add(time.Second))
	if !slices.Equal(kinds(got), []string{app.NotifyWindowReset}) || got[0].title != "a: the five-hour window reset" ||
		got[0].body != "a has 0% of its five-hour window used now (100% before the reset)." {
		t.Fatalf("reset sent %v", got)
	}
	if got := feed(n, p, now.Add(2*time.Second)); len(got) != 0 {
		t.Fatalf("again: %v", got)
	}
	// The same window seen again (a reading that swings back) sends nothing.
	a.Quota.PrimaryUsedPercent, a.Quota.PrimaryResetsAt = 100, end
	feed(n, p, now.Add(3*time.Second))
	a.Quota.PrimaryUsedPercent, a.Quota.PrimaryResetsAt = 0, now.Add(5*time.Hour)
	if got := feed(n, p, now.Add(4*time.Second)); len(got) != 0 {
		t.Fatalf("the same window twice: %v", got)
	}

	// A rest until the end of the week is the weekly limit: the week's reset is told, the
	// five-hour window's is not.
	b := &p.s.Accounts[1]
	now = now.Add(time.Minute)
	week := b.Quota.SecondaryResetsAt
	b.Quota.SecondaryUsedPercent = 99
	p.rest("b", proxy.CooldownRateLimit, week)
	feed(n, p, now)
	now = week.Add(time.Second)
	p.set("b", proxy.StateReady)
	b.Quota.PrimaryUsedPercent, b.Quota.PrimaryResetsAt = 0, now.Add(5*time.Hour)
	b.Quota.SecondaryUsedPercent, b.Quota.SecondaryResetsAt = 0, now.Add(7*24*time.Hour)
	got = feed(n, p, now)
	if len(got) != 1 || got[0].title != "b: the weekly window reset" {
		t.Fatalf("after a weekly limit: %v", got)
	}
}

func TestNotifierLowCapacity(t *testing.T) {
	p := newPool() // 70% and 50% left: 60%
	n := newNotifier()
	feed(n, p, uitest.Now)
	p.s.Accounts[0].Quota.PrimaryUsedPercent = 85
	p.s.Accounts[1].Quota.PrimaryUsedPercent = 80 // 15% and 20% left: 17.5%
	got := feed(n, p, uitest.Now.Add(time.Second))
	if !slices.Equal(kinds(got), []string{app.NotifyLowCapacity}) {
		t.Fatalf("sent %v", got)
	}
	if got[0].body != "Your ChatGPT accounts have 18% of their five-hour capacity left (the warning is at 20%)." {
		t.Errorf("body %q", got[0].body)
	}
	p.s.Accounts[0].Quota.PrimaryUsedPercent = 95 // lower still: no new message
	if got := feed(n, p, uitest.Now.Add(2*time.Second)); len(got) != 0 {
		t.Fatalf("sent %v", got)
	}
	// Above the threshold and below it again, in the same windows: no new message.
	p.s.Accounts[0].Quota.PrimaryUsedPercent = 10
	feed(n, p, uitest.Now.Add(3*time.Second))
	p.s.Accounts[0].Quota.PrimaryUsedPercent = 95
	if got := feed(n, p, uitest.Now.Add(4*time.Second)); len(got) != 0 {
		t.Fatalf("the same windows again: %v", got)
	}
	// A disabled account does not count; the API key never does.
	p.set("a", proxy.StateDisabled)
	p.s.Accounts[1].Quota.PrimaryUsedPercent = 10 // 90% left
	feed(n, p, uitest.Now.Add(5*time.Second))
	p.s.Accounts[1].Quota.PrimaryUsedPercent = 85
	if got := feed(n, p, uitest.Now.Add(6*time.Second)); !slices.Equal(kinds(got), []string{app.NotifyLowCapacity}) {
		t.Fatalf("b alone, after rising above the threshold and falling again: %v", got)
	}
}

// The tray process sends what the notifier returns, for the kinds the settings leave on.
func TestTraySendsEnabledNotifications(t *testing.T) {
	tr, relay, _, _ := newTestTray(t, nil)
	var mu sync.Mutex
	var sent [][2]string
	tr.notes.send = func(title, body string) { mu.Lock(); sent = append(sent, [2]string{title, body}); mu.Unlock() }
	// wait returns what was sent once the sender is done.
	wait := func() [][2]string {
		t.Helper()
		waitNotesSent(tr)
		mu.Lock()
		defer mu.Unlock()
		out := sent
		sent = nil
		return out
	}
	src := uitest.Sample()
	src.Snapshot.Accounts[1].State = proxy.StateReady // one account stays ready throughout
	tr.src = src                                      // live, not fixed: notifications are on
	tr.now = func() time.Time { return uitest.Now }
	tr.refresh()
	src.Snapshot.Accounts[0].State = proxy.StateNeedsLogin
	tr.refresh()
	want := [2]string{"personal needs a new sign-in",
		"The ChatGPT sign-in of personal is no longer accepted: sign in again in the Accounts window (Sign in again…)."}
	if got := wait(); len(got) != 1 || got[0] != want {
		t.Fatalf("sent %q, want %q", got, want)
	}
	tr.refresh()
	if got := wait(); len(got) != 0 {
		t.Fatalf("sent %q again", got)
	}

	if err := relay.Set(app.NotifySetting(app.NotifyNeedsLogin), "false"); err != nil {
		t.Fatal(err)
	}
	src.Snapshot.Accounts[0].State = proxy.StateReady
	tr.refresh()
	src.Snapshot.Accounts[0].State = proxy.StateNeedsLogin
	tr.refresh()
	if got := wait(); len(got) != 0 {
		t.Fatalf("sent %q with the kind off", got)
	}
}

// Notifications are sent off the tray's loop, in order: a blocking send (a busy notification
// daemon) never holds up a tick.
func TestTraySendsNotificationsOffTheLoop(t *testing.T) {
	tr, _, _, _ := newTestTray(t, nil)
	gate := make(chan struct{})
	var mu sync.Mutex
	var titles []string
	tr.notes.send = func(title, _ string) {
		<-gate
		mu.Lock()
		titles = append(titles, title)
		mu.Unlock()
	}
	got := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(titles) }
	src := uitest.Sample()
	src.Snapshot.Accounts[1].State = proxy.StateReady
	tr.src = src
	tr.now = func() time.Time { return uitest.Now }
	tr.refresh()

	tick := func() {
		t.Helper()
		done := make(chan struct{})
		go func() {
			tr.refresh()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("a tick waited for a notification to be sent")
		}
	}
	src.Snapshot.Accounts[0].State = proxy.StateNeedsLogin
	tick()
	until := uitest.Now.Add(10 * time.Minute)
	src.Snapshot.Accounts[1].State, src.Snapshot.Accounts[1].CooldownReason = proxy.StateCooldown, proxy.CooldownRateLimit
	src.Snapshot.Accounts[1].CooldownUntil = &until
	tick()
	if n := got(); len(n) != 0 {
		t.Fatalf("sent %q through a closed gate", n)
	}
	close(gate)
	// team's limit left no account: the pool's notice tells both (TestOneEventIsOne...).
	want := []string{"personal needs a new sign-in", "Every account is resting"}
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Equal(got(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("sent %q, want %q in that order", got(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// One event is one notification: every account resting leaves out the low-capacity notice it
// implies and takes in the limit notices of the same moment, and the relay's ask (which says
// it, with the Redeem action) leaves out all of them.
func TestOneEventIsOneActionableNotification(t *testing.T) {
	resting := notice{kind: app.NotifyAllResting, title: "Every account is resting", body: "No account can take a request now."}
	low := notice{kind: app.NotifyLowCapacity, title: "Five-hour capacity is running low"}
	limit := notice{kind: app.NotifyLimit, title: "team reached its limit", account: "team"}
	limitA := notice{kind: app.NotifyLimit, title: "a reached its limit", account: "a", noneLeft: true}
	limitB := notice{kind: app.NotifyLimit, title: "b reached its limit", account: "b", noneLeft: true}
	for _, c := range []struct {
		in    []notice
		asked bool
		want  []string
		body  string // the first notice's body, when it matters
	}{
		{[]notice{resting, low}, false, []string{app.NotifyAllResting}, ""},
		{[]notice{low}, false, []string{app.NotifyLowCapacity}, ""},
		{[]notice{limit, resting, low}, true, []string{app.NotifyLimit}, ""},
		// One request that found both accounts at their limits: one notification, naming both.
		{[]notice{limitA, limitB, resting, low}, false, []string{app.NotifyAllResting},
			"a and b reached their limits. No account can take a request now."},
		{[]notice{limitA, resting}, false, []string{app.NotifyAllResting}, "a reached its limit. No account can take a request now."},
		{[]notice{limitA, limitB, resting, low}, true, nil, ""},
		// The pool's notice off (or told already): the limit notice says it itself.
		{[]notice{limitA}, false, []string{app.NotifyLimit}, ""},
	} {
		got := actionable(slices.Clone(c.in), c.asked)
		if !slices.Equal(kinds(got), c.want) {
			t.Errorf("%v (asked %v): %v, want %v", kinds(c.in), c.asked, kinds(got), c.want)
		} else if c.body != "" && got[0].body != c.body {
			t.Errorf("%v (asked %v): %q, want %q", kinds(c.in), c.asked, got[0].body, c.body)
		}
	}
	if resting.body != "No account can take a request now." {
		t.Fatal("actionable changed the notice it was given a copy of")
	}

	// In the tray: the ask comes as a request finds every account resting, and the tick after
	// it sends nothing more about the pool.
	tr, _, _, _ := newTestTray(t, nil)
	var mu sync.Mutex
	var sent []string
	tr.notes.send = func(title, _ string) { mu.Lock(); sent = append(sent, title); mu.Unlock() }
	var asks []string
	tr.actNotify = func(title, _, _ string, _ func()) { asks = append(asks, title) }
	src := uitest.Sample()
	src.Snapshot.Accounts[0].Quota.PrimaryUsedPercent = 90
	tr.src, tr.now = src, func() time.Time { return uitest.Now }
	tr.refresh()
	src.Snapshot.Accounts[0].State = proxy.StateCooldown
	src.Snapshot.Accounts[0].CooldownReason = proxy.CooldownRateLimit
	back := uitest.Now.Add(time.Hour)
	src.Snapshot.Accounts[0].CooldownUntil = &back
	src.Snapshot.Accounts[0].Quota.PrimaryUsedPercent = 100
	tr.creditEvent(proxy.CreditEvent{Kind: proxy.CreditAsk, Account: "team", BackAt: back})
	tr.refresh()
	waitNotesSent(tr)
	mu.Lock()
	defer mu.Unlock()
	if len(asks) != 1 || len(sent) != 0 {
		t.Fatalf("asks %q, then sent %q: the ask says it all", asks, sent)
	}
}

// waitNotesSent waits (5 s at most) for the tray's notification sender to be done.
func waitNotesSent(tr *TrayApp) {
	for range 500 {
		tr.notes.mu.Lock()
		idle := !tr.notes.sending
		tr.notes.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The issue-39 case, through the real relay and the tray's loop: one request that finds both
// accounts at their limits sends one notification, which says that no account is left and
// names both; none says that the relay sends the requests to the other accounts.
func TestOneRequestToAnExhaustedPoolIsOneNotification(t *testing.T) {
	tr, relay, _, _ := newTestTray(t, nil)
	limit := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"The usage limit has been reached","resets_in_seconds":3600}}`)
	}))
	defer limit.Close()
	relay.Proxy.SetAccounts([]proxy.Account{
		{Name: "a", Kind: proxy.KindOpenAI, BaseURL: limit.URL + "/v1", Credentials: proxy.Static{Token: "sk-a"}},
		{Name: "b", Kind: proxy.KindOpenAI, BaseURL: limit.URL + "/v1", Credentials: proxy.Static{Token: "sk-b"}},
	})
	srv := httptest.NewServer(relay.Proxy)
	defer srv.Close()

	var mu sync.Mutex
	var sent [][2]string
	tr.notes.send = func(title, body string) { mu.Lock(); sent = append(sent, [2]string{title, body}); mu.Unlock() }
	got := func() [][2]string { mu.Lock(); defer mu.Unlock(); return slices.Clone(sent) }
	tr.refresh() // the baseline, as RunTray's first look
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tr.loop(ctx); close(done) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the tray's loop did not stop within 10 s of the end")
		}
	}()

	resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"gpt-5","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the request got %d, want the pool's 429", resp.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(got()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no notification after the pool ran out")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(noticeWithin) // anything the same event would still send
	waitNotesSent(tr)
	n := got()
	if len(n) != 1 || n[0][0] != "Every account is resting" || !strings.HasPrefix(n[0][1], "a and b reached their limits. No account can take a request now.") ||
		strings.Contains(n[0][1], "other accounts") {
		t.Fatalf("sent %q, want one notification that no account is left, naming a and b", n)
	}
}
