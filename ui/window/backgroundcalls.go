package window

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/source"
)

// Codex's own calls to the ChatGPT backend (route chatgpt): signed in with ChatGPT, an idle
// Codex reads its plugins and MCP servers, sends analytics and reads its usage once a minute,
// each through the relay (its chatgpt_base_url). They are no request of the user's: the
// recent requests leave them out, and one folded line under them counts them by path; opened,
// it lists them with their path.

// splitTraces parts the traces read into the user's requests, at most source.RecentTraces of
// them, and Codex's background calls, each newest first by their start, the time their Time
// column shows (the relay lists them as they end: a long turn ended after calls that started
// later).
func splitTraces(traces []proxy.Trace) (requests, calls []proxy.Trace) {
	for _, t := range traces {
		if t.Background() {
			calls = append(calls, t)
		} else {
			requests = append(requests, t)
		}
	}
	newestFirst := func(a, b proxy.Trace) int { return b.Time.Compare(a.Time) }
	slices.SortStableFunc(requests, newestFirst)
	slices.SortStableFunc(calls, newestFirst)
	return requests[:min(len(requests), source.RecentTraces)], calls
}

// callsSummary is the folded line: how many calls, and the most frequent paths with their
// counts, "12 · wham/usage ×9, ps/plugins/installed ×3".
func callsSummary(calls []proxy.Trace) string {
	counts := map[string]int{}
	for _, c := range calls {
		counts[orDash(c.Path)]++
	}
	paths := make([]string, 0, len(counts))
	for p := range counts {
		paths = append(paths, p)
	}
	slices.SortFunc(paths, func(a, b string) int { return cmp.Or(counts[b]-counts[a], strings.Compare(a, b)) })
	var parts []string
	for i, p := range paths {
		if i == 3 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", p, counts[p]))
	}
	return fmt.Sprintf("Codex's background calls to ChatGPT: %d · %s", len(calls), strings.Join(parts, ", "))
}

// callSpec is the background calls' table, a call a row.
var callSpec = []tableColumn[proxy.Trace]{
	{title: "Time", min: 70, weight: 0.6,
		cell: plainOf(func(t proxy.Trace) string { return t.Time.Local().Format("15:04:05") })},
	{title: "Path", min: 200, weight: 3, cut: true, cell: plainOf(func(t proxy.Trace) string { return orDash(t.Path) })},
	{title: "Account", min: 120, weight: 1.5, cell: plainOf(func(t proxy.Trace) string { return orDash(t.Account) })},
	{title: "Status", min: 90, weight: 1, cell: textOf(requestStatus)},
	{title: "Total", min: 70, weight: 0.7, align: fyne.TextAlignTrailing,
		cell: plainOf(func(t proxy.Trace) string { return millis(t.LatencyBreakdown.TotalMs) })},
}

// backgroundCalls is the folded line and, opened, the calls' table (as tall as six rows, then
// it scrolls). It hides while there is no call.
type backgroundCalls struct {
	*collapsible
	table *listTable[proxy.Trace]
	size  *sized
	rowH  float32
	shown int
}

func newBackgroundCalls() *backgroundCalls {
	b := &backgroundCalls{table: newListTable(callSpec, false), size: &sized{}}
	b.rowH = b.table.newRow().MinSize().Height + compact.Size(theme.SizeNamePadding)
	b.collapsible = newCollapsible("", container.NewBorder(b.table.header, nil, nil, nil, container.New(b.size, b.table.list)))
	b.box.Hide()
	return b
}

// show puts the calls on screen; it reports whether the line's height may have changed.
func (b *backgroundCalls) show(calls []proxy.Trace) (resized bool) {
	if len(calls) == 0 {
		resized = b.box.Visible()
		setVisible(b.box, false)
		return resized
	}
	resized = !b.box.Visible()
	setVisible(b.box, true)
	if text := callsSummary(calls); b.header.Text != text {
		b.header.SetText(text)
		redraws.Add(1)
	}
	if n := min(len(calls), 6); n != b.shown {
		b.shown = n
		b.size.min = fyne.NewSize(0, float32(n)*b.rowH+2)
		resized = true
	}
	b.table.show(calls)
	return resized
}

// requestsSummary is the dim words beside the recent requests' heading.
func requestsSummary(n int) string {
	switch n {
	case 0:
		return "none yet"
	case 1:
		return "the last one"
	}
	return "the last " + strconv.Itoa(n) + ", newest first"
}

// orDash is s, or a dash for nothing.
func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
