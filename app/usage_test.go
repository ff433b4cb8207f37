package app

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
)

// While the relay serves, each finished request becomes a row of the usage ledger, with the
// tokens the upstream reported; /relay/usage and `codexrelay usage` read them back; stopping
// the service writes what was queued; the ledger holds no secret.
func TestUsageLedgerRecordsWhatTheRelayServes(t *testing.T) {
	k := testKeychain(t)
	opt := testOptions(t, k)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\"}}\n\n")
		io.WriteString(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"output\":[],"+
			"\"usage\":{\"input_tokens\":1000,\"input_tokens_details\":{\"cached_tokens\":600},\"output_tokens\":200,\"output_tokens_details\":{\"reasoning_tokens\":50}}}}\n\n")
	}))
	defer up.Close()
	if code, out, errs := runCLI(t, opt, "sk-usage-very-secret\n", "accounts", "add", "--name", "work", "--kind", "openai", "--base-url", up.URL+"/v1"); code != 0 {
		t.Fatalf("add: %s %s", out, errs)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Set(SettingListen, addr); err != nil {
		t.Fatal(err)
	}
	svc := a.NewService()
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		resp, err := http.Post("http://"+addr+"/v1/responses", "application/json",
			strings.NewReader(`{"model":"gpt-5-codex","input":"hi","stream":true,"prompt_cache_key":"sess-1"}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	l := a.Ledger()
	if l == nil {
		t.Fatalf("no ledger: %v", a.LedgerError())
	}
	deadline := time.Now().Add(10 * time.Second)
	for l.Flush() == nil && l.Stats().Written < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the last trace is recorded as its handler returns
	}
	resp, err := http.Get("http://" + addr + "/relay/usage?since=1d&by=session")
	if err != nil {
		t.Fatal(err)
	}
	var rep ledger.Report
	json.NewDecoder(resp.Body).Decode(&rep)
	resp.Body.Close()
	if len(rep.Groups) != 1 || rep.Groups[0].Key != "sess-1" || rep.Total.Requests != 3 || rep.Total.InputTokens != 3000 ||
		rep.Total.CachedTokens != 1800 || rep.Total.OutputTokens != 600 || rep.Total.ReasoningTokens != 150 || rep.Total.CostUSD <= 0 {
		t.Fatalf("/relay/usage: %+v", rep)
	}
	if resp, _ := http.Get("http://" + addr + "/relay/usage?by=planet"); resp == nil || resp.StatusCode != 400 {
		t.Fatalf("bad grouping: %v", resp)
	}
	svc.Stop()
	if a.Ledger() != nil {
		t.Fatal("the ledger is still open after the service stopped")
	}

	code, out, errs := runCLI(t, opt, "", "usage", "--since", "1d", "--by", "model")
	if code != 0 || !strings.Contains(out, "gpt-5-codex") || !strings.Contains(out, "3,000") || !strings.Contains(out, "checked on") {
		t.Fatalf("usage: %d\n%s%s", code, out, errs)
	}
	code, out, _ = runCLI(t, opt, "", "usage", "--by", "account", "--csv")
	if code != 0 || !strings.HasPrefix(out, "account,requests,") || !strings.Contains(out, "\nwork,3,0,3000,1800,600,150,") {
		t.Fatalf("usage --csv: %d\n%s", code, out)
	}
	if code, _, errs := runCLI(t, opt, "", "usage", "--by", "acount"); code != 2 || !strings.Contains(errs, `did you mean "account"`) {
		t.Fatalf("usage --by acount: %d %s", code, errs)
	}
	db, _ := os.ReadFile(filepath.Join(opt.ConfigDir, "usage.db"))
	if len(db) == 0 || strings.Contains(string(db), "very-secret") {
		t.Fatalf("the ledger file is missing (%d bytes) or holds the key", len(db))
	}
}

// With the ledger off nothing is recorded and /relay/usage says so.
func TestUsageLedgerOff(t *testing.T) {
	opt := Options{ConfigDir: keyOffFolder(t), Getenv: func(string) string { return "" }}
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	a.Set(SettingListen, addr)
	if err := a.Set(SettingUsageLedger, "false"); err != nil {
		t.Fatal(err)
	}
	svc := a.NewService()
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	if a.Ledger() != nil {
		t.Fatal("a ledger is open although it is off")
	}
	resp, err := http.Get("http://" + addr + "/relay/usage")
	if err != nil || resp.StatusCode != 404 {
		t.Fatalf("/relay/usage with the ledger off: %v %v", err, resp)
	}
	// Turning it on while the relay serves opens it.
	if err := a.Set(SettingUsageLedger, "true"); err != nil {
		t.Fatal(err)
	}
	if a.Ledger() == nil {
		t.Fatalf("the ledger did not open: %v", a.LedgerError())
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"7d": now.Add(-7 * 24 * time.Hour), "36h": now.Add(-36 * time.Hour), "2026-11-01": time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), "": {},
	} {
		if got, err := ParseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"7 days", "-3d", "yesterday"} {
		if _, err := ParseSince(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// seedLedger writes rows into the ledger at path, dated days ago.
func seedLedger(t *testing.T, path string, now time.Time, rows ...ledger.Row) {
	t.Helper()
	l, err := ledger.Open(ledger.Options{Path: path, Now: func() time.Time { return now }, Retention: 10000 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		l.Record(r)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// The attack of issue 24: projects chosen by a client are printed raw, so a CSV opened in a
// spreadsheet runs formulas and the table writes terminal escapes.
func TestUsageOutputIsSafeToOpen(t *testing.T) {
	opt := testOptions(t, Keychain{})
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	var rows []ledger.Row
	for _, p := range []string{"=cmd|' /C calc'!A0", "+SUM(1)", "-1+1", "@A1", "plain", "\x1b]0;owned\x07x\u202egnp.exe"} {
		rows = append(rows, ledger.Row{Time: now.Add(-time.Hour), Account: "a", Model: "gpt-5", Project: p, InputTokens: 1})
	}
	seedLedger(t, a.LedgerPath(), now, rows...)
	code, out, errs := runCLI(t, opt, "", "usage", "--by", "project", "--csv")
	if code != 0 {
		t.Fatalf("usage --csv: %d %s", code, errs)
	}
	for _, want := range []string{"\n'=cmd|' /C calc'!A0,", "'+SUM(1),", "'-1+1,", "'@A1,", "\nplain,"} {
		if !strings.Contains(out, want) {
			t.Errorf("usage --csv lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runCLI(t, opt, "", "usage", "--by", "project")
	if code != 0 {
		t.Fatalf("usage: %d %s", code, errs)
	}
	if strings.ContainsAny(out, "\x1b\x07\u202e") || !strings.Contains(out, "]0;ownedxgnp.exe") {
		t.Fatalf("the table holds control characters:\n%q", out)
	}
}

// The attack of issue 24: a read-only `codexrelay usage` pruned the ledger with the default
// 400 days, ignoring usage-retention-days. A report never prunes.
func TestUsageReportsNeverPrune(t *testing.T) {
	opt := testOptions(t, Keychain{})
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Set(SettingUsageRetentionDays, "1000"); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	seedLedger(t, a.LedgerPath(), now, ledger.Row{Time: now.Add(-500 * 24 * time.Hour), Account: "a", Model: "gpt-5", Session: "old", InputTokens: 7})
	for i := range 2 {
		code, out, errs := runCLI(t, opt, "", "usage", "--since", "600d", "--by", "session", "--csv")
		if code != 0 || !strings.Contains(out, "\nold,1,0,7,") {
			t.Fatalf("report %d: %d\n%s%s", i, code, out, errs)
		}
	}
}
