package app

import (
	"runtime/debug"
)

// DefaultMemoryLimit is the soft memory limit of a running relay (tray app or serve): the Go
// runtime collects garbage harder as the process nears it, instead of letting the heap double
// past what is alive. A burst of 2,000 concurrent streams then peaks under 150 MB rather than
// twice that; a relay that needs more than the limit still gets it (the limit is soft, and the
// collector's share of the CPU is capped). GOMEMLIMIT, when set, wins.
const DefaultMemoryLimit = 96 << 20

// SetMemoryLimit applies DefaultMemoryLimit unless the environment sets GOMEMLIMIT.
func SetMemoryLimit(getenv func(string) string) {
	if getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(DefaultMemoryLimit)
}
