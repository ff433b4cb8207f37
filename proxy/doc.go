// Package proxy is Codex Relay's OpenAI-compatible routing proxy: it takes Responses and
// Chat Completions requests on a loopback port, over HTTP or a WebSocket, and sends each to a
// healthy upstream account (a ChatGPT sign-in, an OpenAI API key, a Chat Completions server),
// moving to the next account when one fails before any byte reached the client, and relaying
// the answer in the client's own protocol.
//
// The package imports neither the app nor the UI; it can be embedded and tested alone. An
// embedder builds a Server (server.go), gives it accounts, aliases and settings, and serves it;
// what it shows comes from Snapshot, the traces and the hooks.
//
// A request travels in four phases, one file each (handler.go's comment walks them); each hands
// the next what it found as a value (the client's request and body, the plan, one try an
// account, the answer). The files, by phase:
//
//	admit     handler.go (routes, guards, the exchange), body.go (reading and pooling bodies,
//	          what upstream bodies are built from), memory.go (the memory budget every byte a
//	          request holds counts against), served.go (responses the relay served, replayed), session.go (the client's affinity key,
//	          bounded), instanceauth.go (signed requests of the relay's own programs)
//	route     route.go (the plan, dispatch), catalog.go and version.go (the model catalog),
//	          aliases.go, pool.go and account.go (the accounts, their health and order),
//	          hold.go (waiting for a resting pool), creditsrequest.go (a banked reset for a
//	          pool that rests too long)
//	attempt   attempt.go (the try, the send, the verdict), wire.go (the five wires and their
//	          bodies), lite.go (Responses Lite), tier.go (service tiers), sealed.go (content
//	          sealed to an account: what a request leaves out of an account's input),
//	          sealedit.go (the edits of an account's input: parts left out, compactions put as
//	          the account's own or, for a Chat account, as text), sealtable.go (which account sealed what), sealscan.go (finding sealed values in
//	          JSON bytes), compaction.go (a conversation's compaction across a rotation: kept,
//	          preferred, re-made), compactstore.go (the requests behind compactions, in memory
//	          or on disk; owner_unix.go and owner_other.go: whose its files are), relaycompact.go
//	          (the compactions the relay makes for Chat accounts, sealed with its own key),
//	          compactv1.go (POST /v1/responses/compact), turn.go (Codex's headers
//	          and turn state), limit.go (limits inside a 200 stream), upstream.go and call.go
//	          (upstream requests and their deadlines)
//	respond   respond.go (relaying an answer), sink.go (where a stream goes, where it comes
//	          from), drain.go (reusing connections), usage.go (tokens), redact.go (upstream text)
//
// A WebSocket client's turns take the same phases: socket.go (the client's socket),
// socketwire.go (the upstream's socket, the fifth wire), conversation.go (what a connection
// keeps between turns). Beside the phases: server.go (the Server and its options), budgets.go
// (the relay's byte budgets: one table, adding up to what the process is allowed), lru.go (the
// one least-recently-used order the budgets evict by), errors.go (the OpenAI error shape, and
// what an upstream's error means), stats.go, trace.go and metrics.go (what is shown), models.go
// (GET /v1/models), pause.go (pausing from another process), quota.go (usage windows),
// poolusage.go (the pool's windows over the signed-in user's usage, for Codex's /status),
// credits.go, creditsclient.go and creditsredeem.go (banked resets), sysinfo.go (the system the
// user agent names).
package proxy
