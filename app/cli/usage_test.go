package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
)

func TestUsageCellsAreEscaped(t *testing.T) {
	for in, want := range map[string]string{
		"=1+1": "'=1+1", "+1": "'+1", "-1": "'-1", "@A1": "'@A1", "\tx": "'\tx", "\rx": "'\rx", "a=b": "a=b", "": "",
	} {
		if got := csvText(in); got != want {
			t.Errorf("csvText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := terminalText("a\x1b[31mb\u202ec\td\x9b"); got != "a\uFFFD[31mb\uFFFDc\uFFFDd\uFFFD" {
		t.Errorf("terminalText: %q", got)
	}
}

// usage --by tier: priority (Codex's Fast mode) at its multiplier, and a note that says so.
func TestUsageByTier(t *testing.T) {
	opt := testOptions(t)
	a, err := app.Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	l, err := ledger.Open(ledger.Options{Path: a.LedgerPath(), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tier := range []string{"", "priority", "priority"} {
		l.Record(ledger.Row{Time: now.Add(-time.Hour), Account: "k", Model: "gpt-5", ServiceTier: tier, InputTokens: 1_000_000, Status: 200})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, opt, "", "usage", "--by", "tier")
	if code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	var std, pri []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "standard":
			std = f
		case len(f) > 1 && f[0] == "priority" && f[1] == "(Fast)":
			pri = f[1:]
		}
	}
	// gpt-5 input at $1.25 per million: standard 1.25, priority 2 x 2 x 1.25.
	if len(std) < 9 || len(pri) < 9 || std[1] != "1" || std[len(std)-1] != "1.25" || pri[1] != "2" || pri[len(pri)-1] != "5.00" {
		t.Fatalf("by tier:\n%s", out)
	}
	if !strings.Contains(out, "priced at 2× the standard price") {
		t.Errorf("no note on the priority price:\n%s", out)
	}
	// Scripts get the table's names: the tier no request named is "standard", not "".
	_, js, _ := runCLI(t, opt, "", "usage", "--by", "tier", "--json")
	_, csvOut, _ := runCLI(t, opt, "", "usage", "--by", "tier", "--csv")
	var rep ledger.Report
	json.Unmarshal([]byte(js), &rep)
	if len(rep.Groups) != 2 || !slices.ContainsFunc(rep.Groups, func(g ledger.Group) bool { return g.Key == "standard" }) ||
		!strings.Contains(csvOut, "\nstandard,") {
		t.Errorf("by tier for scripts:\n%s\n%s", js, csvOut)
	}
}
