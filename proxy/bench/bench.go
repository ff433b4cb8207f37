// Package bench holds Codex Relay's benchmarks, the figures `codexrelay bench` prints: the
// per-request serialization cache (serialization.go), the catalog's stale-while-revalidate
// refresh (catalog.go), what the relay adds to a direct call (proxy.go: latency, event delay,
// memory under load, with what the ledger and the sealed-part tracking cost: ledger.go,
// sealed.go), a growing conversation over HTTP and over WebSocket (conversation.go), what
// hostile clients cost its memory (sockets.go, keys.go), and whether its memory budget bounds
// what it builds and keeps for a conversation (budget.go); and how much of a week of demand each
// routing strategy serves through the real pool on a virtual clock (pool.go). Relays and bare
// proxies that must not share the benchmark's memory run as processes of their own (process.go). They use the proxy
// as any embedder would, through its exported API; print.go writes the figures for people.
package bench

import "github.com/codexrelay/codexrelay/proxy/internal/stat"

var (
	ms       = stat.Ms
	quantile = stat.Quantile
)
