package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
)

// `codexrelay status` says that no relay runs, then where the running one serves, whether it
// is paused and how its accounts stand, and whether Codex uses it; --json says the same to a
// script; -h prints its flag.
func TestStatus(t *testing.T) {
	opt := testOptions(t)
	code, out, errs := runCLI(t, opt, "", "status")
	if code != 0 || !strings.Contains(out, "Relay:    not running") || !strings.Contains(out, "Accounts: none yet") ||
		!strings.Contains(out, "Codex:    not configured") || errs != "" {
		t.Fatalf("no relay: %d %q %q", code, out, errs)
	}
	svc := runningRelay(t, opt)
	addr := svc.Status().Addr
	code, out, errs = runCLI(t, opt, "", "status")
	if code != 0 || !strings.Contains(out, "Relay:    running (the tray app, pid ") || !strings.Contains(out, "on http://"+addr+"/v1") ||
		!strings.Contains(out, "Paused:   no") {
		t.Fatalf("running: %d %q %q", code, out, errs)
	}
	if code, _, errs := runCLI(t, opt, "", "pause"); code != 0 {
		t.Fatal(errs)
	}
	code, out, _ = runCLI(t, opt, "", "status", "--json")
	var st relayStatus
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || !st.Running || !st.Paused || st.Listen != addr || st.Mode != "tray" {
		t.Fatalf("--json: %d %q %v", code, out, err)
	}
	if code, out, _ := runCLI(t, opt, "", "status", "-h"); code != 0 || !strings.Contains(out, "codexrelay status [--json]") || !strings.Contains(out, "--json") {
		t.Fatalf("-h: %q", out)
	}
}

// An API key the upstream refused is no ready account: status counts it as one to replace.
func TestStatusCountsARefusedKeyApart(t *testing.T) {
	n := countStates([]proxy.AccountStats{{State: proxy.StateReady}, {State: proxy.StateKeyRejected}, {State: proxy.StateNeedsLogin}})
	if n.Total != 3 || n.Ready != 1 || n.KeyRejected != 1 || n.NeedsLogin != 1 {
		t.Fatalf("%+v", n)
	}
}

// An account the relay keeps in reserve is counted apart from the resting ones, and status
// says until when, with the buckets resting on an account and the pool's pace.
func TestStatusSaysTheReservesTheRestingBucketsAndThePace(t *testing.T) {
	back := time.Date(2026, 3, 12, 16, 40, 0, 0, time.Local)
	spark := time.Date(2026, 3, 12, 15, 10, 0, 0, time.Local)
	accounts := []proxy.AccountStats{
		{Name: "work", Kind: proxy.KindChatGPT, State: proxy.StateCooldown, CooldownUntil: &back, CooldownReason: app.CooldownReserve, Reserve: 20},
		{Name: "home", Kind: proxy.KindChatGPT, State: proxy.StateReady, Reserve: 10,
			BucketRests: []proxy.BucketRest{{Bucket: "codex_bengalfox", Name: "GPT-5.3-Codex-Spark", Until: spark}, {Bucket: "codex_other", Until: spark}}},
		{Name: "plain", Kind: proxy.KindOpenAI, State: proxy.StateReady},
	}
	n := countStates(accounts)
	if n.InReserve != 1 || n.Resting != 0 || n.Ready != 2 || n.NextBack != nil {
		t.Fatalf("counts %+v", n)
	}
	st := relayStatus{Running: true, Mode: "tray", PID: 7, Listen: "127.0.0.1:7455", Accounts: n, Held: held(accounts),
		Pace: &paceStatus{LastsUntil: back, PastReset: false}}
	var out strings.Builder
	c := &CLI{Stdout: &out}
	c.printStatus(st)
	for _, want := range []string{
		"Accounts: 3: 2 ready, 1 kept in reserve\n",
		"work: kept in reserve until 16:40 (it keeps 20%)\n",
		"home: keeps 10% in reserve; GPT-5.3-Codex-Spark resting until 15:10; codex_other resting until 15:10\n",
		"Pace:     the pool's 5-hour capacity lasts until 16:40 at this pace\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "plain:") || strings.Contains(out.String(), "rate limit") {
		t.Errorf("status:\n%s", out.String())
	}
	out.Reset()
	st.Pace = &paceStatus{LastsUntil: back, PastReset: true, NextReset: &spark}
	c.printStatus(st)
	if !strings.Contains(out.String(), "lasts past the 15:10 reset at this pace") {
		t.Errorf("past the reset:\n%s", out.String())
	}
}
