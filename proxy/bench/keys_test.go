package bench_test

import (
	"testing"

	"github.com/codexrelay/codexrelay/proxy/bench"
)

// TestKeysBenchRuns runs `bench keys` small: every request is answered as its model says, and
// the recent traces do not carry the keys whole.
func TestKeysBenchRuns(t *testing.T) {
	r, err := bench.Keys(bench.KeysOptions{Requests: 3, KeyBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.NotFound != 3 || r.Served != 3 || r.BaselineRSS <= 0 || r.PeakRSS <= 0 || r.IdleRSS <= 0 {
		t.Fatalf("keys %+v", r)
	}
	if r.TracesBytes > 64<<10 {
		t.Fatalf("the recent traces are %d KiB after 6 requests with 1 MiB keys", r.TracesBytes>>10)
	}
}
