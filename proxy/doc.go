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
// account, the answer). The accounts themselves, their health, the judge of what an upstream
// says and the one way to call an account are proxy/pool's: proxy asks it which accounts may
// serve and tells it what each call met. By phase (doc_test.go holds this index to the folder):
//
//	handler.go, routes.go                    admit: the guards, the route table, the exchange's one front door (begin, admitBody, admitted)
//	body.go, memory.go                       admit: reading and pooling bodies; the memory budget every byte a request holds counts against
//	served.go, session.go, instanceauth.go   admit: responses the relay served, replayed; the client's affinity key; the relay's own signed programs
//	route.go, catalog.go, version.go         route: the plan and dispatch; the model catalog and Codex's version
//	aliases.go, account.go                   route: model aliases; the pool's account types, as the embedder names them
//	backend.go                               route: Codex's backend calls (web search, images), to the ChatGPT accounts
//	hold.go, creditsrequest.go               route: waiting for a resting pool; a banked reset for a pool that rests too long
//	attempt.go, wire.go, upstream.go, call.go  attempt: the try through pool.Call and its verdict; the five wires; upstream requests and their deadlines
//	lite.go, tier.go, turn.go, limit.go      attempt: Responses Lite; service tiers; Codex's headers and turn state; limits inside a 200 stream
//	sealed.go, sealedit.go, sealtable.go, sealscan.go  attempt: sealed parts: what a request leaves out, the input's edits, who sealed what, the byte scans
//	compaction.go, compactstore.go, compactv1.go  attempt: a compaction across a rotation (kept, preferred, re-made), the kept requests, POST /v1/responses/compact
//	relaycompact.go, owner_unix.go, owner_other.go  attempt: the compactions the relay makes for Chat accounts; whose the kept files are
//	respond.go, sink.go, drain.go, usage.go  respond: relaying an answer; where a stream goes; reusing connections; tokens
//	maderesponse.go, interrupt.go            respond: a response the relay makes itself; a turn the client interrupted
//	socket.go, socketwire.go, conversation.go  a WebSocket client's turns: the client's socket, the upstream's socket, what a connection keeps
//	server.go, budgets.go, lru.go, signal.go  beside: the Server and its options; the byte budgets, one table; the one LRU; the change signal
//	errors.go, redact.go                     beside: the OpenAI error shape and the one answer when no account can serve; upstream text
//	stats.go, trace.go, metrics.go, models.go  beside: what is shown (stats, traces, Prometheus); GET /v1/models
//	quota.go, poolusage.go, chatgptapi.go    beside: usage reads; the pool's windows for Codex's /status; Codex's own ChatGPT calls
//	ratelimits.go                            beside: the pool's rate limits on every answer (headers, a socket's codex.rate_limits)
//	credits.go, creditsclient.go, creditsredeem.go  beside: banked resets: the policy, the backend's calls, a redemption
//	pause.go, sysinfo.go, doc.go             beside: pausing from another process; the system the user agent names; this index
//
// Below: proxy/pool (the accounts and the judge), proxy/payload (parse-once bodies and the
// serialization cache), proxy/sse (the SSE reader), proxy/bridge (Chat Completions and
// Responses translated), proxy/bench (the benchmarks), proxy/internal (redact, stat, testkit).
package proxy
