package tray

import (
	context "context"
	errors "errors"
	"log/slog"
	sync "sync"
	time "time"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/source"
)

// The tray's usage line: today's tokens and cost from the usage ledger, read at most once a
// minute.

// todayLine is the tray's usage line: "Today: 1.2 M tokens · $3.40", the cost marked
// "API-equiv." for ChatGPT seats ("$1.30 + $2.10 API-equiv." for both kinds).
func todayLine(rep ledger.Report, k look.Kinds) string {
	c := k.Split(rep.Groups)
	cost := look.Dollars(c.Real)
	switch {
	case c.Equivalent > 0 && c.Real > 0:
		cost = look.Dollars(c.Real) + " + " + look.Dollars(c.Equivalent) + " API-equiv."
	case c.Equivalent > 0:
		cost = look.Dollars(c.Equivalent) + " API-equiv."
	}
	if rep.Total.Tokens() == 0 {
		return "Today: no tokens yet"
	}
	return "Today: " + look.TokenCount(rep.Total.Tokens()) + " tokens · " + cost
}

// today is the tray's cached usage line. It is read again only when it may have changed: at once
// when the settings or the day change, and at most every source.UsageEvery after the relay
// served requests (served, its request total, moved); an idle relay's line is never read again.
type today struct {
	mu     sync.Mutex
	text   string
	at     time.Time // when it was read (elapsed clock); zero: read at the next look
	gen    uint64    // the settings generation it was read under
	served int64     // the relay's request total then
	day    time.Time // the local day it counts
}

// line is the cached usage line at the elapsed-clock time t under settings generation gen,
// with served requests served so far; when a read is due it reads src (accounts accts, day of
// now). It may block on the ledger.
func (c *today) line(gen uint64, served int64, t time.Time, src source.UsageSource, accts []proxy.AccountStats, now time.Time, log *slog.Logger) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	day := source.LocalMidnight(now)
	if !c.at.IsZero() && c.gen == gen && c.day.Equal(day) && (c.served == served || t.Sub(c.at) < source.UsageEvery) {
		return c.text
	}
	c.at, c.gen, c.served, c.day = t, gen, served, day
	ctx, cancel := context.WithTimeout(context.Background(), source.UsageReadTimeout)
	defer cancel()
	rep, err := src.Summary(ctx, ledger.Query{Since: source.LocalMidnight(now), By: "account"})
	if err != nil {
		c.text = ""
		if !errors.Is(err, source.ErrUsageOff) && !errors.Is(err, source.ErrUsageClosed) {
			log.Debug("usage ledger: cannot read today's usage", "error", err)
		}
		return ""
	}
	c.text = todayLine(rep, look.KindsOf(accts))
	return c.text
}
