package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// Print writes the result as the table `codexrelay bench serialization` shows.
func (r SerializationResult) Print(w io.Writer) {
	fmt.Fprintf(w, "Upstream payload serialization: %d samples, %d input items, %d attempts, %d bytes\n\n",
		r.Samples, r.InputItems, r.Attempts, r.SerializedBytes)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measure\tbaseline\tper-request cache\tgain\t")
	pct := func(b, c float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f %%", 100*(1-c/b))
	}
	fmt.Fprintf(tw, "full serializations\t%d\t%d\t%s\t\n", r.Baseline.FullSerializations, r.Candidate.FullSerializations,
		pct(float64(r.Baseline.FullSerializations), float64(r.Candidate.FullSerializations)))
	fmt.Fprintf(tw, "median\t%.3f ms\t%.3f ms\t%s\t\n", r.Baseline.MedianMs, r.Candidate.MedianMs, pct(r.Baseline.MedianMs, r.Candidate.MedianMs))
	fmt.Fprintf(tw, "p95\t%.3f ms\t%.3f ms\t%s\t\n", r.Baseline.P95Ms, r.Candidate.P95Ms, pct(r.Baseline.P95Ms, r.Candidate.P95Ms))
	tw.Flush()
	fmt.Fprintf(w, "\none attempt: cache overhead %.4f ms (%.2f %%)\n", r.SingleAttemptOverheadMs, 100*r.SingleAttemptOverheadRatio)
	fmt.Fprintf(w, "each later attempt: %.3f %% of a full serialization\n", 100*r.SubsequentAttemptCostRatio)
	fmt.Fprintf(w, "parse + build: %.0f MB/s\n", r.ParseBuildMBps)
}

// Print writes the result as the table `codexrelay bench catalog` shows.
func (r CatalogResult) Print(w io.Writer) {
	fmt.Fprintf(w, "Model catalog refresh: %d samples of %d concurrent requests on an expired catalog, discovery %.0f ms\n\n",
		r.Samples, r.ConcurrentRequests, r.SimulatedCatalogProbeMs)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tmedian\tp95\trefreshes\t")
	fmt.Fprintf(tw, "blocking baseline\t%.3f ms\t%.3f ms\t%d\t\n", r.Baseline.MedianMs, r.Baseline.P95Ms, r.Baseline.Refreshes)
	fmt.Fprintf(tw, "stale-while-revalidate\t%.4f ms\t%.4f ms\t%d (expected %d)\t\n", r.Candidate.MedianMs, r.Candidate.P95Ms, r.Candidate.Refreshes, r.Candidate.ExpectedRefreshes)
	tw.Flush()
	fmt.Fprintf(w, "\nmedian preparation improvement: %.2f %%\n", 100*r.MedianPreparationImprovementRatio)
}

// Print writes the result as the table `codexrelay bench proxy` shows, each figure with its
// target in brackets: the phases that ran (all, when Phases is empty).
func (r ProxyResult) Print(w io.Writer) {
	ran := func(phase string) bool { return len(r.Phases) == 0 || slices.Contains(r.Phases, phase) }
	where := "processes of their own"
	if !r.Concurrent.RelayProcess {
		where = "one process for client, proxies and upstream"
	}
	fmt.Fprintln(w, "Relay against a direct call to an in-process fake upstream, on loopback (target in brackets):")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if ran("small") {
		fmt.Fprintf(tw, "small request\tdirect p50 %.0f us, relay p50 %.0f us: added p50 %.0f us [<= 100], p99 %.0f us [<= 1000]\n",
			r.Small.DirectP50Us, r.Small.RelayP50Us, r.Small.AddedP50Us, r.Small.AddedP99Us)
	}
	if ran("large") {
		fmt.Fprintf(tw, "%.2f MB streamed request\tdirect %.2f ms, relay %.2f ms: added %.2f ms = %.2f parse+build passes of %.2f ms [<= 2]\n",
			float64(r.Large.Bytes)/1e6, r.Large.DirectMs, r.Large.RelayMs, r.Large.AddedMs, r.Large.AddedPerPass, r.Large.ParseBuildMs)
	}
	if ran("stream") {
		fmt.Fprintf(tw, "stream of %d events\tupstream-to-client delay p50 %.0f us, p99 %.0f us [<= 1000] (direct p50 %.0f us)\n",
			r.Stream.Events, r.Stream.EventDelayP50Us, r.Stream.EventDelayP99Us, r.Stream.DirectDelayP50)
	}
	if ran("loads") {
		for _, l := range []struct {
			r      LoadResult
			target string
		}{{r.Concurrent, "<= 1.5x bare"}, {r.ConcurrentLarge, "<= 150 MB"}} {
			fmt.Fprintf(tw, "%d concurrent streams x %d\tpeak RSS %s, bare ReverseProxy %s: %.2fx [%s]; above RSS at start (%s, bare %s): %.2fx; %d errors, bare %d [0] (%s)\n",
				l.r.Streams, l.r.Rounds, mb(l.r.PeakRSSBytes), mb(l.r.BarePeakRSSBytes), l.r.PeakToBare, l.target,
				mb(l.r.RSSBeforeBytes), mb(l.r.BareRSSBeforeBytes), l.r.AddedToBare, l.r.Errors, l.r.BareErrors, where)
		}
	}
	if lg := r.Ledger; ran("ledger") && !lg.Skipped {
		fmt.Fprintf(tw, "usage ledger\tsmall request p50 with it %.0f us, without %.0f us: added %.1f us [< 20]; %.0f rows/s written (%d of 100000)\n",
			lg.OnP50Us, lg.OffP50Us, lg.AddedP50Us, lg.RowsPerSecond, lg.RowsWritten)
	}
	if sl := r.Sealed; ran("sealed") {
		fmt.Fprintf(tw, "sealed-item tracking\tsmall Codex turn p50 with it %.0f us, without %.0f us: added %.1f us [< 5]; after a rotation (one foreign item left out) %.0f us against the clean body untracked %.0f us: added %.1f us; %.0f bytes per remembered item\n",
			sl.OnP50Us, sl.OffP50Us, sl.AddedP50Us, sl.RotatedOnP50Us, sl.RotatedOffP50Us, sl.RotatedAddedP50Us, sl.BytesPerItem)
		fmt.Fprintf(tw, "multi-agent sealed parts\ta turn that stayed with its own spawn call and sub-agent task p50 with tracking %.0f us, without %.0f us: added %.1f us [< 5]\n",
			sl.MultiAgentOnP50Us, sl.MultiAgentOffP50Us, sl.MultiAgentAddedP50Us)
	}
	if ro := r.Rotation; ran("rotation") {
		fmt.Fprintf(tw, "%.2f MB request rotated\tleaving out %d items the first account sealed %.2f ms, nothing sealed %.2f ms: added %.2f passes of %.2f ms [within 2]; %d full serialization(s)\n",
			float64(ro.Bytes)/1e6, ro.SealedItems, ro.StrippedMs, ro.PlainMs, ro.AddedPasses, ro.PassMs, ro.Serializations)
	}
	c := r.Conversation
	if ran("conversation") {
		fmt.Fprintf(tw, "%d-turn conversation, %s of history\tlast %d turns: upload to the upstream over WebSocket %.2f %% of HTTP's [<= 5 %%]; added per turn: HTTP %.2f ms, WebSocket %.2f ms [WebSocket no worse]\n",
			c.Turns, mb(c.HistoryBytes), min(5, c.Turns), 100*c.LastUploadRatio, c.LastHTTPAddedMs, c.LastWSAddedMs)
	}
	if ran("backend") {
		for _, l := range []struct {
			what string
			l    BackendLoad
		}{{fmt.Sprintf("%d image edits of %s at once", r.Backend.Edits.Concurrent, mb(int64(r.Backend.Edits.BodyBytes))), r.Backend.Edits},
			{fmt.Sprintf("%d images of %s at once", r.Backend.Answers.Concurrent, mb(int64(r.Backend.Answers.AnswerBytes))), r.Backend.Answers}} {
			fmt.Fprintf(tw, "%s\tanswered %d, 503 with Retry-After %d, failed %d [none failed]; relay peak RSS %s [< 512 MB], bare proxy %s; relay RSS after %s\n",
				l.what, l.l.Answered, l.l.Unavailable, l.l.Failed, mb(l.l.PeakRSSBytes), mb(l.l.BarePeakRSSBytes), mb(l.l.RSSAfterBytes))
		}
		im := r.Backend.Image
		fmt.Fprintf(tw, "a %s image answer\tdirect %.1f ms, through the relay %.1f ms: added %.1f ms [< 100]\n", mb(int64(im.Bytes)), im.DirectMs, im.RelayMs, im.AddedMs)
	}
	if ran("loads") {
		fmt.Fprintf(tw, "idle after the loads\tRSS %s before, %s %.0f s after [within 10%%]\n",
			mb(r.Idle.RSSBeforeBytes), mb(r.Idle.RSSAfterBytes), r.Idle.AfterSeconds)
	}
	if ran("soak") {
		fmt.Fprintf(tw, "%d sequential requests\tRSS %s after 1000, %s after all [within 10%%]; goroutines %d idle, %d after [equal] (%s)\n",
			r.Soak.Requests, mb(r.Soak.RSSAfter1000Bytes), mb(r.Soak.RSSAfterAllBytes), r.Soak.GoroutinesIdle, r.Soak.GoroutinesAfterSoak, where)
	}
	if ran("budget") {
		r.Budget.print(tw)
	}
	tw.Flush()
	if ran("conversation") && len(c.PerTurn) > 0 {
		fmt.Fprintln(w)
		c.Print(w)
	}
}

// print writes the budget phase's rows.
func (b BudgetResult) print(w io.Writer) {
	where := func(own bool) string {
		if own {
			return "relay process"
		}
		return "one process for client, relay and upstream"
	}
	rp := b.Replay
	fmt.Fprintf(w, "%d continuations of a %s bridged conversation\tanswered %d, 503 with Retry-After %d, other %d [0] %s; relay peak RSS %s [< 512 MB] (%s; %s settled before); %d reached the Chat account, the largest %s; %.1f s\n",
		rp.Continuations, mb(rp.ConversationBytes), rp.Answered, rp.Unavailable, rp.Failed, statuses(rp.Statuses), mb(rp.PeakRSSBytes),
		where(rp.RelayProcess), mb(rp.SettledRSSBytes), rp.UpstreamRequests, mb(rp.UpstreamMaxBytes), rp.Seconds)
	up := b.Uploads
	fmt.Fprintf(w, "%d small requests beside %d slow uploads of %s\tp50 %.1f ms, max %.1f ms [max < 2000 ms]; answered %d, 503 with Retry-After %d, other %d [0] %s; uploads trickled %.1f s, %s sent, answered %s; relay peak RSS %s (%s)\n",
		up.Requests, up.Uploads, mb(up.DeclaredBytes), up.P50Ms, up.MaxMs, up.Answered, up.Unavailable, up.Failed, statuses(up.Statuses),
		up.TrickleSecs, mb(up.SentBytes), statuses(up.UploadStatuses), mb(up.PeakRSSBytes), where(up.RelayProcess))
	rm := b.Remake
	fmt.Fprintf(w, "%d turns after a rotation of a %s compacted conversation\t%d re-make(s) of the compaction [1]; answered %d, 503 with Retry-After %d, other %d [0] %s; relay peak RSS %s (%s; %s settled before); %.1f s\n",
		rm.Turns, mb(rm.KeptRequestBytes), rm.Remakes, rm.Answered, rm.Unavailable, rm.Failed, statuses(rm.Statuses), mb(rm.PeakRSSBytes),
		where(rm.RelayProcess), mb(rm.SettledRSSBytes), rm.Seconds)
}

// statuses writes counts by status, sorted: {200: 14, 503+retry-after: 2}.
func statuses(m map[string]int) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Print writes the result as the table `codexrelay bench conversation` shows.
func (c ConversationResult) Print(w io.Writer) {
	{
		fmt.Fprintf(w, "%d-turn conversation played %d times each way, %.1f MB of history at the end; last %d turns: upload to the upstream over WebSocket %.2f %% of HTTP's [<= 5 %%]; added per turn HTTP %.2f ms, WebSocket %.2f ms [WebSocket no worse]\n\n",
			c.Turns, c.Rounds, float64(c.HistoryBytes)/1e6, min(5, c.Turns), 100*c.LastUploadRatio, c.LastHTTPAddedMs, c.LastWSAddedMs)
		fmt.Fprintln(w, "Conversation, turn by turn (bytes in, client to relay and relay to upstream; the relay's added time):")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "turn\tHTTP in\tHTTP up\tWS in\tWS up\tHTTP added\tWS added\t")
		for _, t := range c.PerTurn {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.2f ms\t%.2f ms\t\n", t.Turn, kb(t.HTTPClientBytes), kb(t.HTTPUpstreamBytes),
				kb(t.WSClientBytes), kb(t.WSUpstreamBytes), t.HTTPAddedMs, t.WSAddedMs)
		}
		tw.Flush()
	}
}

func kb(b int64) string { return fmt.Sprintf("%.0f KB", float64(b)/1e3) }

// mb formats bytes as megabytes.
func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

// Print writes the result as the table `codexrelay bench pool` shows: the scenario, each
// strategy's week, and the verdict on issue 52's aims.
func (r PoolResult) Print(w io.Writer) {
	sc := r.Scenario
	fmt.Fprintf(w, "Pool of %d accounts over %d days (seed %d): weekly windows of %.0f units, five-hour windows of %.0f to %.0f, Spark bucket %.0f a week; "+
		"%d conversations, %d turns (%d Spark); demand %.0f units against %.0f of capacity (%.0f %%)\n\n",
		sc.Accounts, sc.Days, sc.Seed, sc.WeeklyUnits, sc.FiveHourMin, sc.FiveHourMax, sc.SparkUnits,
		sc.Conversations, sc.Turns, sc.SparkTurns, sc.Demand, sc.Capacity, 100*sc.Demand/max(sc.Capacity, 1))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tserved\texpired unused\tclient limits\tmoves\tlimited turns\t")
	for _, s := range r.Strategies {
		limits, moves, limited := fmt.Sprint(s.ClientLimits), fmt.Sprint(s.Moves), fmt.Sprint(s.Limited)
		if s.Name == StrategyHindsight {
			limits, moves, limited = "-", "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%.2f %%\t%.2f %%\t%s\t%s\t%s\t\n", s.Name, 100*s.ServedShare, 100*s.ExpiredUnusedShare, limits, moves, limited)
	}
	tw.Flush()
	rf, h, pr := r.strategy("reset-first"), r.strategy(StrategyHindsight), r.strategy("priority")
	within := "within 2 %"
	if rf.ServedShare < 0.98*h.ServedShare {
		within = "NOT within 2 %"
	}
	below := "not below it"
	if rf.ServedShare < pr.ServedShare {
		below = "BELOW it"
	}
	fmt.Fprintf(w, "\nreset-first serves %.2f %% of demand, hindsight %.2f %%: %.2f %% less [%s]; priority %.2f %%: reset-first %+.2f points [%s]\n",
		100*rf.ServedShare, 100*h.ServedShare, 100*(1-rf.ServedShare/max(h.ServedShare, 1e-9)), within, 100*pr.ServedShare,
		100*(rf.ServedShare-pr.ServedShare), below)
	limits, bucket := 0, 0
	for _, s := range r.Strategies {
		limits, bucket = limits+s.ClientLimits, bucket+s.BucketLimits
	}
	fmt.Fprintf(w, "client limits while an account had quota: %d under all strategies [0]", limits)
	if bucket > 0 {
		fmt.Fprintf(w, "; %d of them Spark turns kept off accounts that rest for their own limit while their Spark bucket had quota (the pool rests the whole account)", bucket)
	}
	fmt.Fprintln(w)
}
