package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// Human formats shared by the tray and the windows. Units are spaced ("12 s", "4 min"),
// counts get thousands separators, and nothing here reads a clock: callers pass now.

// count formats n with thousands separators: 1284 -> "1,284".
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// plural is "1 request", "1,284 requests".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return count(n) + " " + noun + "s"
}

// age formats how old something is: "12 s", "4 min", "3 h", "2 d"; negative means never.
func age(ms int64) string {
	if ms < 0 {
		return "never fetched"
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

// countdown formats the time left until t for a ticking display: "4 min 32 s", "45 s",
// "1 h 12 min"; "now" once t has passed.
func countdown(t, now time.Time) string {
	d := t.Sub(now).Round(time.Second)
	switch {
	case d <= 0:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min %02d s", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return fmt.Sprintf("%d h %02d min", int(d/time.Hour), int(d%time.Hour/time.Minute))
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
		return "Cooling down"
	case proxy.StateNeedsLogin:
		return "Needs sign-in"
	case proxy.StateDisabled:
		return "Disabled"
	}
	return state
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

// quotaText is a quota bar's label: "37% · resets 14:20" for the five-hour window (a time
// today), "62% · resets Fri" for the weekly one (a day).
func quotaText(used float64, resets, now time.Time) string {
	s := fmt.Sprintf("%.0f%%", used)
	if resets.IsZero() {
		return s
	}
	r := resets.Local()
	if r.Sub(now) < 20*time.Hour {
		return s + " · resets " + r.Format("15:04")
	}
	return s + " · resets " + r.Format("Mon")
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
	case "", "completed":
		return s
	}
	return s + " " + t.Outcome
}

// truncate shortens s to at most n runes, with an ellipsis.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
