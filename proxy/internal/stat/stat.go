// Package stat holds the few figures the relay and its benchmarks compute alike.
package stat

import (
	"slices"
	"time"
)

// Ms converts a duration to fractional milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Quantile is the q-quantile (0..1) of xs by the nearest-rank method; 0 for no values. xs is
// not changed.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	k := int(q*float64(len(xs))+0.999999999) - 1
	return xs[min(max(k, 0), len(xs)-1)]
}
