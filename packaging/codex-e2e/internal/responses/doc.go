// Package responses holds what the two loopback stand-ins for the Responses backend under
// packaging/codex-e2e share: capture (which records what the real Codex CLI sends) and fake
// (the two-account ChatGPT backend of `make codex-e2e`). It builds a scripted response as the
// stream of events the backend sends (Stream), the output items in it (Message, Reasoning, Call),
// finds the tools a request offers (Offered, Find), and speaks the wire: request bodies (Decode),
// events as SSE (WriteSSE) or over a WebSocket (ServeSocket). Each program keeps its own script:
// what to answer, and what to refuse.
package responses
