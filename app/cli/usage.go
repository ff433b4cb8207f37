package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
)

// usageCommand is `codexrelay usage`: what the usage ledger recorded, grouped.
var usageCommand = &command{
	name:    "usage",
	usage:   []string{"[--since 7d] [--by account|model|project|day|session|tier] [--json|--csv]"},
	summary: "tokens and cost per account, model, project, day, session or service tier, from the usage ledger",
	details: `--since takes a duration back from now (7d, 36h) or a date (2026-11-01, UTC).
Costs are at the API's list prices of the date shown: what the tokens cost on an API key, and
what a ChatGPT seat's tokens would have cost there (API-equivalent). A request sent at the
priority tier (Codex's Fast mode) is priced at the priority multiplier.`,
	flags: usageFlags,
}

func usageFlags(fs *flag.FlagSet) runFunc {
	since := fs.String("since", "7d", "how far back: a duration (7d, 36h) or a date (2026-11-01)")
	by := fs.String("by", "account", "group by account, model, project, day, session or tier")
	asJSON := fs.Bool("json", false, "print one JSON object")
	asCSV := fs.Bool("csv", false, "print CSV")
	return func(c *CLI, _ []string) error {
		from, err := app.ParseSince(*since, time.Now())
		if err != nil {
			return usagef("--since: %v", err)
		}
		if !slices.Contains(ledger.Groupings, *by) {
			if s := app.Suggest(*by, ledger.Groupings); s != "" {
				return usagef("--by %q: group by one of %s (did you mean %q?)", *by, strings.Join(ledger.Groupings, ", "), s)
			}
			return usagef("--by %q: group by one of %s", *by, strings.Join(ledger.Groupings, ", "))
		}
		if *asJSON && *asCSV {
			return usagef("--json and --csv cannot be used together")
		}
		a, err := c.open()
		if err != nil {
			return err
		}
		path := a.LedgerPath()
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("no usage recorded yet: the ledger %s does not exist (the relay creates it when it serves)", path)
		}
		// A report reads: it never prunes (the relay does, with the retention set) and never
		// moves a damaged file aside. The retention still tells it where the rows end.
		us := a.Settings().Usage
		opt := ledger.Options{Path: path, Prices: us.Prices, ReadOnly: true}
		if us.RetentionDays > 0 {
			opt.Retention = time.Duration(us.RetentionDays) * 24 * time.Hour
		}
		l, err := ledger.Open(opt)
		if err != nil {
			return fmt.Errorf("the usage ledger %s cannot be read: %w", path, err)
		}
		defer l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rep, err := l.Summary(ctx, ledger.Query{Since: from, By: *by})
		if err != nil {
			return fmt.Errorf("the usage ledger %s cannot be read: %w", path, err)
		}
		switch {
		case *asJSON:
			return json.NewEncoder(c.Stdout).Encode(namedTiers(rep))
		case *asCSV:
			return writeUsageCSV(c, namedTiers(rep))
		}
		printUsage(c, a, rep)
		return nil
	}
}

// namedTiers names the tier of the requests that asked for none "standard", as the table does
// (the ledger keys it ""), in a report by tier for scripts (--json, --csv).
func namedTiers(rep ledger.Report) ledger.Report {
	if rep.Query.By != "tier" {
		return rep
	}
	rep.Groups = slices.Clone(rep.Groups)
	for i := range rep.Groups {
		if rep.Groups[i].Key == "" {
			rep.Groups[i].Key = "standard"
		}
	}
	return rep
}

// printUsage prints a report as a table, costs labelled by the kind of account they are for.
func printUsage(c *CLI, a *app.App, rep ledger.Report) {
	seats := map[string]bool{}
	for _, m := range a.Settings().Accounts {
		if m.Kind == string(proxy.KindChatGPT) {
			seats[m.Name] = true
		}
	}
	fmt.Fprintf(c.Stdout, "Usage since %s, by %s\n\n", rep.Query.Since.Local().Format("2006-01-02 15:04"), rep.Query.By)
	tw := tabwriter.NewWriter(c.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\trequests\terrors\tinput\tcached\toutput\treasoning\tcache hit\tcost (USD)\t\n", rep.Query.By)
	line := func(key string, t ledger.Totals, note string) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%.0f %%\t%s%s\t\n", key, t.Requests, t.Errors, tokens(t.InputTokens),
			tokens(t.CachedTokens), tokens(t.OutputTokens), tokens(t.ReasoningTokens), 100*t.CacheHitRatio, costCell(t), note)
	}
	for _, g := range rep.Groups {
		key, note := terminalText(g.Key), ""
		switch {
		case key == "" && rep.Query.By == "tier":
			key = "standard"
		case key == "":
			key = "(none)"
		case key == ledger.TierPriority && rep.Query.By == "tier":
			key = "priority (Fast)"
		}
		if rep.Query.By == "account" && seats[g.Key] {
			note = " (API-equivalent)"
		}
		line(key, g.Totals, note)
	}
	line("total", rep.Total.Totals, "")
	tw.Flush()
	fmt.Fprintf(c.Stdout, "\nCosts at the API's list prices checked on %s; a ChatGPT seat's cost is what its tokens would cost on an API key.\n", rep.PricesCheckedAt)
	if m := rep.TierMultipliers[ledger.TierPriority]; m > 0 && hasPriority(rep) {
		fmt.Fprintf(c.Stdout, "Requests at the priority tier (Codex's Fast mode) are priced at %g× the standard price; on a ChatGPT seat that is an API-equivalent estimate of how fast they use the quota.\n", m)
	}
	if len(rep.UnpricedModels) > 0 {
		fmt.Fprintf(c.Stdout, "No price known for %s: its tokens are unpriced (a cost with + leaves them out; set a price under \"usage\".\"prices\" in the settings).\n", terminalText(strings.Join(rep.UnpricedModels, ", ")))
	}
	if rep.FromRollups {
		fmt.Fprintln(c.Stdout, "Days before the retention come from the daily totals, in whole UTC days.")
	}
}

func writeUsageCSV(c *CLI, rep ledger.Report) error {
	w := csv.NewWriter(c.Stdout)
	w.Write([]string{rep.Query.By, "requests", "errors", "input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens", "cost_usd"})
	for _, g := range rep.Groups {
		t := g.Totals
		w.Write([]string{csvText(g.Key), strconv.FormatInt(t.Requests, 10), strconv.FormatInt(t.Errors, 10), strconv.FormatInt(t.InputTokens, 10),
			strconv.FormatInt(t.CachedTokens, 10), strconv.FormatInt(t.OutputTokens, 10), strconv.FormatInt(t.ReasoningTokens, 10),
			strconv.FormatFloat(t.CostUSD, 'f', 4, 64)})
	}
	w.Flush()
	return w.Error()
}

// terminalText is a client-chosen name (a project, a session, a model) as the table prints
// it: control characters (terminal escapes, tabs that would break the columns) and
// bidirectional overrides are shown as U+FFFD instead of acting on the terminal. The ledger
// stores names cleaned already; this covers rows an older version wrote.
func terminalText(s string) string {
	return strings.Map(func(r rune) rune {
		if ledger.IsUnsafeRune(r) {
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// csvText is a client-chosen name as a CSV cell: a cell that a spreadsheet would take for a
// formula (starting with = + - @, a tab or a carriage return) is prefixed with a quote ('),
// as OWASP advises, so that it opens as the text it is.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// tokens shows a token count with thousands separators.
func tokens(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// hasPriority says whether a report by tier holds requests sent at the priority tier.
func hasPriority(rep ledger.Report) bool {
	for _, g := range rep.Groups {
		if rep.Query.By == "tier" && g.Key == ledger.TierPriority && g.Totals.Requests > 0 {
			return true
		}
	}
	return false
}

// costCell is a total's cost as the usage table shows it: "unpriced" when no price is known
// for any of its tokens, a trailing + when for some (the figure then leaves them out).
func costCell(t ledger.Totals) string {
	switch {
	case t.UnpricedTokens > 0 && t.UnpricedTokens >= t.Tokens():
		return "unpriced"
	case t.UnpricedTokens > 0:
		return fmt.Sprintf("%.2f+", t.CostUSD)
	}
	return fmt.Sprintf("%.2f", t.CostUSD)
}
