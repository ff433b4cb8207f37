package ledger

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseSince reads a --since or ?since= value: a duration back from now ("7d", "36h", "90m")
// or a date ("2026-11-01", from its start in UTC). "" is no bound (the zero time).
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days >= 0 {
			return now.Add(-time.Duration(days) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration back from now (7d, 36h) nor a date (2026-11-01)", s)
}
