package window

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
)

// Human formats of the windows (ui/look has those the tray says too). Units are spaced ("12 s",
// "4 min"), and nothing here reads a clock: callers pass now.

// age formats how old the catalog is in whole minutes, so that it changes once a minute, not
// every second: "under 1 min", "4 min", "3 h", "2 d"; negative means never fetched.
func age(ms int64) string {
	if ms < 0 {
		return "never fetched"
	}
	if ms < 60_000 {
		return "under 1 min"
	}
	return span(time.Duration(ms) * time.Millisecond)
}

// span formats a duration coarsely for ages and windows: "12 s", "4 min", "3 h", "2 d".
func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d/time.Second))
	case d < 90*time.Minute:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d/time.Hour))
	}
	return fmt.Sprintf("%d d", int(d/(24*time.Hour)))
}

// millis formats a latency: "0.42 ms", "3.1 ms", "850 ms", "2.4 s".
func millis(ms float64) string {
	switch {
	case ms < 1:
		return fmt.Sprintf("%.2f ms", ms)
	case ms < 10:
		return fmt.Sprintf("%.1f ms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f s", ms/1000)
}

// seconds formats a duration like a latency: "850 ms", "1.2 s".
func seconds(d time.Duration) string { return millis(float64(d) / float64(time.Millisecond)) }

// tildePath shortens a path in the home folder to "~/…", as people write it.
func tildePath(p string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		return p
	}
	if rest, ok := strings.CutPrefix(p, home+string(filepath.Separator)); ok {
		return "~" + string(filepath.Separator) + rest
	}
	return p
}

// minutes formats a duration in milliseconds as whole minutes: "10 min".
func minutes(ms int64) string { return fmt.Sprintf("%d min", ms/60000) }

// percent formats part/total: "80.9%", or "–" when total is zero.
func percent(part, total int64) string {
	if total == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(total))
}

// onOff is "On" or "Off".
func onOff(b bool) string {
	if b {
		return "On"
	}
	return "Off"
}

// stateText names an account state for people.
func stateText(state string) string {
	switch state {
	case proxy.StateReady:
		return "Ready"
	case proxy.StateCooldown:
		return "Resting"
	case proxy.StateNeedsLogin:
		return "Needs sign-in"
	case proxy.StateKeyRejected:
		return "Key rejected"
	case proxy.StateDisabled:
		return "Disabled"
	}
	return state
}

// accountState is an account's state as the tables say it (look.AccountState), as a text cell
// shows it.
func accountState(a proxy.AccountStats, now time.Time) textView {
	text, tone := look.AccountState(a, now)
	if b := look.BucketRests(a, now); b != "" {
		// It serves, but not every model: "Ready · GPT-5.3-Codex-Spark resting until 15:10".
		text += " · " + b
		if tone == look.Good {
			tone = look.Warn
		}
	}
	return textView{text, tone}
}

// kindText names an account kind for people.
func kindText(k proxy.Kind) string {
	switch k {
	case proxy.KindChatGPT:
		return "ChatGPT"
	case proxy.KindOpenAI:
		return "API key"
	}
	return string(k)
}

// quotaText is a usage window's figure: "37% · resets 17:20" (the clock time, or the day and
// time when it is further away than 20 hours). A reset time already past says "reset", for
// usage read before it.
func quotaText(used float64, resets, now time.Time) string {
	s := fmt.Sprintf("%.0f%%", used)
	switch {
	case resets.IsZero():
		return s
	case !resets.After(now):
		return s + " · reset " + look.Clock(resets, now)
	}
	return s + " · resets " + look.Clock(resets, now)
}

// quotaCellView is one usage window of an account for a quota cell: the five-hour (primary)
// or the weekly window; "–" for an account without a known quota.
func quotaCellView(a proxy.AccountStats, weekly bool, now time.Time) quotaView {
	if a.Quota == nil {
		return quotaView{text: textView{"–", look.Dim}}
	}
	used, resets := a.Quota.PrimaryUsedPercent, a.Quota.PrimaryResetsAt
	if weekly {
		used, resets = a.Quota.SecondaryUsedPercent, a.Quota.SecondaryResetsAt
	}
	return quotaView{bar: true, used: min(max(used/100, 0), 1), text: textView{text: quotaText(used, resets, now)}}
}

// quotaExtras is what an account's usage carries beside its two windows, in a few words
// (app.QuotaExtras: "GPT-6 Sol 80% five-hour, 12% weekly · credits 12.50"); "" when none.
func quotaExtras(q *proxy.Quota) string {
	pct := func(used float64, _ time.Time) string { return fmt.Sprintf("%.0f%%", used) }
	return strings.Join(app.QuotaExtras(q, pct), " · ")
}

// modelText is "requested → resolved", or just the model when they agree.
func modelText(t proxy.Trace) string {
	switch {
	case t.Model == "":
		return "–"
	case t.ResolvedModel == "" || t.ResolvedModel == t.Model:
		return t.Model
	}
	return t.Model + " → " + t.ResolvedModel
}

// triedText lists the accounts a request tried, in order, each once: "personal → work".
func triedText(t proxy.Trace) string {
	var names []string
	for _, a := range t.Attempts {
		if len(names) == 0 || names[len(names)-1] != a.Account {
			names = append(names, a.Account)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, " → ")
}

// statusText is the HTTP status a client got, with the outcome when it says more.
func statusText(t proxy.Trace) string {
	s := strconv.Itoa(t.Status)
	switch t.Outcome {
	case "", proxy.OutcomeCompleted:
	default:
		s += " " + t.Outcome
	}
	if t.HeldMs > 0 { // it waited for a resting pool: "200 · held 2.1 s"
		s += " · held " + strconv.FormatFloat(t.HeldMs/1000, 'f', 1, 64) + " s"
	}
	// What became of the conversation's compaction on an account that could not read it: the
	// memory it stands for went with the request, or was lost.
	switch {
	case t.SealedOmittedParts["compaction"] > 0:
		s += " · compaction left out"
	case t.CompactionRemade > 0:
		s += " · compaction re-made"
	}
	return s
}

// upperFirst is s with its first letter in upper case, to start a sentence with app's words.
func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}
