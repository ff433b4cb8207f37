// Package bench holds Codex Relay's benchmarks, the figures `codexrelay bench` prints: the
// per-request serialization cache, the catalog's stale-while-revalidate refresh and
// what the relay adds to a direct call (latency, event delay, memory under load). They use the
// proxy as any embedder would, through its exported API.
package bench

import "github.com/codexrelay/codexrelay/proxy/internal/stat"

var (
	ms       = stat.Ms
	quantile = stat.Quantile
)
