package cli

import (
	"encoding/json"
	"strings"
	"testing"

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
