package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// windowed is a ChatGPT account of a fake backend with real windows: its own limit of perWindow
// requests a window, ending at reset (then a fresh window of the same length begins), and a
// Spark bucket (codex_bengalfox) of its own, as /wham/usage reports them and as its 429s name
// them. served counts the requests it answered, by model.
type windowed struct {
	*upstream
	mu                    sync.Mutex
	clk                   *clock
	perWindow, sparkLimit int
	used, sparkUsed       int
	reset                 time.Time
	length                time.Duration
	served                map[string]int
}

func newWindowed(t *testing.T, clk *clock, perWindow int, reset time.Time, sparkLimit int) *windowed {
	w := &windowed{clk: clk, perWindow: perWindow, sparkLimit: sparkLimit, reset: reset, length: 5 * time.Hour, served: map[string]int{}}
	w.upstream = newUpstream(t, func(rw http.ResponseWriter, r *http.Request, n int) {
		w.mu.Lock()
		w.roll()
		if r.URL.Path == "/backend-api/wham/usage" {
			fmt.Fprintf(rw, `{"plan_type":"pro","rate_limit":{"primary_window":{"used_percent":%d,"limit_window_seconds":18000,"reset_at":%d}},`+
				`"additional_rate_limits":[{"limit_name":"GPT-5.3-Codex-Spark","metered_feature":"codex_bengalfox","rate_limit":{"primary_window":{"used_percent":%d,"limit_window_seconds":18000,"reset_at":%d}}}]}`,
				100*w.used/w.perWindow, w.reset.Unix(), 100*w.sparkUsed/max(w.sparkLimit, 1), w.reset.Unix())
			w.mu.Unlock()
			return
		}
		if !strings.HasSuffix(r.URL.Path, "/responses") {
			w.mu.Unlock()
			http.NotFound(rw, r) // the banked resets' reads, say: none here
			return
		}
		body := string(readRecorded(r))
		spark := strings.Contains(body, `"gpt-5.3-codex-spark"`)
		full := !spark && w.used >= w.perWindow || spark && w.sparkUsed >= w.sparkLimit
		if full {
			limit := "codex"
			if spark {
				limit = "codex_bengalfox"
			}
			reset := w.reset.Unix()
			w.mu.Unlock()
			status(429, fmt.Sprintf(`{"error":{"code":"usage_limit_reached","message":"limit","resets_at":%d}}`, reset), "X-Codex-Active-Limit", limit)(rw, r, n)
			return
		}
		if spark {
			w.sparkUsed++
			w.served["spark"]++
		} else {
			w.used++
			w.served["codex"]++
		}
		w.mu.Unlock()
		answerText("ok")(rw, r, n)
	})
	return w
}

// roll begins a fresh window once the last one reset.
func (w *windowed) roll() {
	for !w.clk.Now().Before(w.reset) {
		w.used, w.sparkUsed, w.reset = 0, 0, w.reset.Add(w.length)
	}
}

func (w *windowed) count(kind string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.served[kind]
}

// The case against real windows: two accounts of 4 requests a window, A's window ending
// in 7 s and B's in 45 s, B listed first, 6 requests. Spent soonest-reset first (reset-first), A
// serves 4 before its window resets and B 2: nothing of A's window is lost. In list order
// (priority), B serves 4 and A 2, and 2 of A's 4 expire unused.
func TestResetFirstSpendsWhatExpiresFirst(t *testing.T) {
	for _, c := range []struct {
		strategy      string
		wantA, wantB  int
		lostAtAsReset int
	}{
		{proxy.StrategyResetFirst, 4, 2, 0},
		{proxy.StrategyPriority, 2, 4, 2},
	} {
		t.Run(c.strategy, func(t *testing.T) {
			clk := newClock()
			a := newWindowed(t, clk, 4, clk.Now().Add(7*time.Second), 4)
			b := newWindowed(t, clk, 4, clk.Now().Add(45*time.Second), 4)
			r := newRelay(t, proxy.Options{Now: clk.Now, Hold: -1, Strategy: c.strategy}, chatgptAccount("b", b.upstream), chatgptAccount("a", a.upstream))
			r.RefreshQuotas(context.Background())
			for i := range 6 {
				if resp := r.post(t, "/v1/responses", `{"model":"gpt-5-codex","input":"hi","stream":true}`); resp.StatusCode != 200 {
					t.Fatalf("request %d: %d", i, resp.StatusCode)
				} else {
					readAll(t, resp)
				}
			}
			if a.count("codex") != c.wantA || b.count("codex") != c.wantB {
				t.Fatalf("a served %d, b %d; want %d and %d", a.count("codex"), b.count("codex"), c.wantA, c.wantB)
			}
			if lost := 4 - a.count("codex"); lost != c.lostAtAsReset {
				t.Fatalf("%d of A's window expired unused, want %d", lost, c.lostAtAsReset)
			}
		})
	}
}

// Spark's bucket against real windows: a 429 naming codex_bengalfox rests Spark alone on the
// account, the next gpt-5-codex request still goes to it, and Spark goes to the other account;
// the stats and the pool's usage say so.
func TestSparksLimitRestsSparkAlone(t *testing.T) {
	clk := newClock()
	a := newWindowed(t, clk, 10, clk.Now().Add(2*time.Hour), 1)
	b := newWindowed(t, clk, 10, clk.Now().Add(3*time.Hour), 5)
	r := newRelay(t, proxy.Options{Now: clk.Now, Hold: -1}, chatgptAccount("a", a.upstream), chatgptAccount("b", b.upstream))
	r.RefreshQuotas(context.Background())
	post := func(model string) int {
		resp := r.post(t, "/v1/responses", `{"model":"`+model+`","input":"hi","stream":true}`)
		readAll(t, resp)
		return resp.StatusCode
	}
	for _, model := range []string{"gpt-5.3-codex-spark", "gpt-5.3-codex-spark", "gpt-5-codex"} {
		if st := post(model); st != 200 {
			t.Fatalf("%s: %d", model, st)
		}
	}
	// a served Spark once (its bucket's limit), b the second; gpt-5-codex still went to a.
	if a.count("spark") != 1 || b.count("spark") != 1 || a.count("codex") != 1 || b.count("codex") != 0 {
		t.Fatalf("a served spark %d, codex %d; b spark %d, codex %d", a.count("spark"), a.count("codex"), b.count("spark"), b.count("codex"))
	}
	st := r.account(t, "a")
	if st.State != proxy.StateReady || len(st.BucketRests) != 1 || st.BucketRests[0].Bucket != "codex_bengalfox" ||
		st.BucketRests[0].Name != "GPT-5.3-Codex-Spark" {
		t.Fatalf("a's stats: %+v", st)
	}
}
