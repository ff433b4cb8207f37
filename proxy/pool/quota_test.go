package pool

import (
	"strings"
	"testing"
	"time"
)

// What /wham/usage carries beside the two windows (plan, credits, banked resets, the limits of
// metered features) is read, bounded and cleaned: it is upstream text.
func TestUsageBesideTheWindows(t *testing.T) {
	now := time.Unix(1764460800, 0)
	body := `{"plan_type":"pro","rate_limit":{"primary_window":{"used_percent":12,"limit_window_seconds":18000,"reset_at":1764470000},
		"secondary_window":{"used_percent":40,"limit_window_seconds":604800,"reset_at":1765000000}},
		"credits":{"has_credits":true,"unlimited":false,"balance":"12.50"},
		"rate_limit_reset_credits":{"available_count":2},
		"additional_rate_limits":[{"limit_name":"GPT-6 Sol\u0007","metered_feature":"codex_gpt_6_sol","rate_limit":{"primary_window":{"used_percent":80,"limit_window_seconds":18000,"reset_at":1764471000}}},
		{"limit_name":"` + strings.Repeat("x", 500) + `","metered_feature":"f"}]}`
	q, err := ParseUsage([]byte(body), now)
	if err != nil {
		t.Fatal(err)
	}
	if q.PrimaryUsedPercent != 12 || q.SecondaryUsedPercent != 40 || q.PlanType != "pro" {
		t.Errorf("windows %+v", q)
	}
	if q.Credits == nil || !q.Credits.HasCredits || q.Credits.Balance != "12.50" || q.ResetCredits == nil || *q.ResetCredits != 2 {
		t.Errorf("credits %+v, reset credits %v", q.Credits, q.ResetCredits)
	}
	if len(q.Additional) != 1 || q.Additional[0].Name != "GPT-6 Sol" || q.Additional[0].PrimaryUsedPercent != 80 ||
		!q.Additional[0].PrimaryResetsAt.Equal(time.Unix(1764471000, 0)) {
		t.Errorf("additional %+v", q.Additional)
	}
	// An older answer, with the windows only, reads as before.
	q, _ = ParseUsage([]byte(`{"rate_limit":{"primary_window":{"used_percent":5}}}`), now)
	if q.Credits != nil || q.ResetCredits != nil || q.Additional != nil || q.PrimaryUsedPercent != 5 {
		t.Errorf("old shape %+v", q)
	}
}
