package cli

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/relay"
)

// runningRelay is the relay of opt's settings folder, serving on a free loopback port as the
// tray app would (its instance claimed, so that the commands find it); it stops with the test.
func runningRelay(t *testing.T, opt app.Options) *relay.Service {
	t.Helper()
	inst, other, err := app.ClaimInstance(opt.ConfigDir, "tray")
	if err != nil || other != nil {
		t.Fatalf("claim: %v %v", other, err)
	}
	t.Cleanup(inst.Release)
	opt.Getenv = func(k string) string {
		if k == "CODEXRELAY_LISTEN" {
			return "127.0.0.1:0"
		}
		return ""
	}
	a, err := relay.Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	svc := a.NewService()
	svc.Instance = inst
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	return svc
}

// `codexrelay pause` and `resume` pause and resume the running relay of the settings folder, as
// the tray's Pause and Resume do: its status follows, a client meets 503 relay_paused, and
// each says when there was nothing to do.
func TestPauseAndResumeTheRunningRelay(t *testing.T) {
	opt := testOptions(t)
	svc := runningRelay(t, opt)
	addr := svc.Status().Addr
	// paused says whether a request is refused as paused (with no account it is refused
	// otherwise when the relay serves).
	paused := func() bool {
		t.Helper()
		resp, err := http.Post("http://"+addr+"/v1/responses", "application/json", strings.NewReader(`{"model":"gpt-5","input":"hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), "relay_paused")
	}

	// Another local program cannot pause it: the route obeys only a signed request.
	resp, err := http.Post("http://"+addr+"/relay/pause", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || svc.Status().Paused {
		t.Fatalf("an unsigned pause: %d, paused %v", resp.StatusCode, svc.Status().Paused)
	}

	code, out, errs := runCLI(t, opt, "", "pause")
	if code != 0 || out != "Paused: the relay refuses requests (503 relay_paused) until `codexrelay resume`.\n" || errs != "" {
		t.Fatalf("pause: %d %q %q", code, out, errs)
	}
	if st := svc.Status(); !st.Paused || st.Running {
		t.Errorf("the service after pause: %+v", st)
	}
	if !paused() {
		t.Error("a request to the paused relay is not refused as paused")
	}
	if info := app.RunningInstance(opt.ConfigDir); info == nil || info.Listen != addr || !info.Paused {
		t.Errorf("the instance file of the paused relay: %+v", info)
	}
	if code, out, _ := runCLI(t, opt, "", "pause"); code != 0 || out != "The relay was paused already.\n" {
		t.Errorf("pause again: %d %q", code, out)
	}

	code, out, errs = runCLI(t, opt, "", "resume")
	if code != 0 || out != "Resumed: the relay serves requests again.\n" || errs != "" {
		t.Fatalf("resume: %d %q %q", code, out, errs)
	}
	if st := svc.Status(); st.Paused || !st.Running {
		t.Errorf("the service after resume: %+v", st)
	}
	if paused() {
		t.Error("a request to the resumed relay is still refused as paused")
	}
	if code, out, _ := runCLI(t, opt, "", "resume"); code != 0 || out != "The relay was not paused: it serves requests.\n" {
		t.Errorf("resume again: %d %q", code, out)
	}
}

// With no relay running for the folder, both fail and say how to start one; -h explains, and
// an argument is a usage error (exit 2).
func TestPauseWithoutARelayAndItsUsage(t *testing.T) {
	opt := testOptions(t)
	for _, cmd := range []string{"pause", "resume"} {
		code, out, errs := runCLI(t, opt, "", cmd)
		if code != 1 || out != "" || !strings.Contains(errs, "no Codex Relay is running for this settings folder: start it with codexrelay") {
			t.Errorf("%s with no relay: %d %q %q", cmd, code, out, errs)
		}
		code, out, _ = runCLI(t, opt, "", cmd, "-h")
		if code != 0 || !strings.Contains(out, "codexrelay "+cmd) || !strings.Contains(out, "settings folder") {
			t.Errorf("%s -h: %d %q", cmd, code, out)
		}
		code, _, errs = runCLI(t, opt, "", cmd, "now")
		if code != 2 || errs == "" {
			t.Errorf("%s now: %d %q", cmd, code, errs)
		}
	}
	code, out, _ := runCLI(t, opt, "", "-h")
	if code != 0 || !strings.Contains(out, "codexrelay pause") || !strings.Contains(out, "codexrelay resume") {
		t.Errorf("the usage does not list pause and resume: %q", out)
	}
}

// The help of the commands about banked resets calls them so, never "reset credit" or "credit"
// alone (issue 32 Low).
func TestHelpSaysBankedReset(t *testing.T) {
	opt := testOptions(t)
	for _, args := range [][]string{{"-h"}, {"accounts", "-h"}, {"accounts", "redeem", "-h"}, {"settings", "set", "-h"}} {
		_, out, _ := runCLI(t, opt, "", args...)
		low := strings.ToLower(strings.ReplaceAll(out, "reset-credits", ""))
		if strings.Contains(low, "reset credit") || strings.Contains(strings.ReplaceAll(low, "credits balance", ""), " credit") {
			t.Errorf("%v says credit:\n%s", args, out)
		}
	}
}
