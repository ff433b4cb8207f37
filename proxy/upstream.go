package proxy

import (
	"context"
	"net/http"
	"time"
)

// Upstream requests: every request the relay sends to an account's upstream is built in one
// place, and waits for it as long as the timeouts say.

// upstreamRequest starts every request the relay sends to an account's upstream (a Responses
// or Chat Completions call, the model list, the usage): the credential, what the caller
// accepts, and the identity the Codex CLI's own calls carry (originator, user agent, client
// version, ChatGPT account id), so that an upstream sees one client, not a foreign one.
func (s *Server) upstreamRequest(ctx context.Context, m *member, cred Credential, method, url, accept string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return nil, err
	}
	h := req.Header
	h.Set("Authorization", "Bearer "+cred.Token)
	h.Set("Accept", accept)
	h.Set("User-Agent", s.UserAgent())
	if m.Kind == KindChatGPT {
		h.Set("originator", Originator)
		h.Set("version", s.catalog.clientVersion())
		if cred.AccountID != "" {
			h.Set("chatgpt-account-id", cred.AccountID)
		}
	}
	return req, nil
}

// Originator is how the Codex CLI names itself to the ChatGPT backend; the relay's calls say
// the same.
const Originator = "codex_cli_rs"

// UserAgent is the user agent of every upstream call: the Codex CLI's, with the client version
// the catalog asks models for (CatalogOptions.ClientVersion), the system and the architecture,
// e.g. "codex_cli_rs/0.171.0 (Debian GNU/Linux 12; x86_64)".
func (s *Server) UserAgent() string { return UserAgentFor(s.catalog.clientVersion()) }

// UserAgentFor is the user agent of a Codex CLI of version v ("": the version the catalog
// asks with by default) on this system: for an embedder that calls an upstream without a
// Server (the sign-in of a process that runs no relay).
func UserAgentFor(v string) string {
	if v == "" {
		v = defaultClientVersion
	}
	return Originator + "/" + v + " (" + systemName() + "; " + archName() + ")"
}

// Timeouts bound how long the relay waits for an upstream. Before the first byte reached the
// client a timeout is one more failure that moves the request to the next account; once the
// stream is relayed, StreamIdle ends it with a well-formed response.failed.
type Timeouts struct {
	// Header is the wait for response headers of a streamed request (default 60 s). A
	// non-streamed upstream request may take up to 10 minutes: it answers once it is done.
	Header time.Duration
	// FirstEvent is the wait, from the headers, for the first event that carries output (the
	// bookkeeping events response.created and response.in_progress, and comments, do not
	// count) (default 30 s).
	FirstEvent time.Duration
	// StreamIdle is the longest silence between upstream reads once the answer is being
	// relayed (default 300 s, the Codex CLI's own stream idle timeout).
	StreamIdle time.Duration
}

// Default timeouts.
const (
	DefaultHeaderTimeout     = 60 * time.Second
	DefaultFirstEventTimeout = 30 * time.Second
	DefaultStreamIdleTimeout = 300 * time.Second
	// nonStreamHeaderTimeout bounds a non-streamed upstream request, whose headers come with
	// the whole answer.
	nonStreamHeaderTimeout = 10 * time.Minute
)

func (t Timeouts) withDefaults() Timeouts {
	if t.Header <= 0 {
		t.Header = DefaultHeaderTimeout
	}
	if t.FirstEvent <= 0 {
		t.FirstEvent = DefaultFirstEventTimeout
	}
	if t.StreamIdle <= 0 {
		t.StreamIdle = DefaultStreamIdleTimeout
	}
	return t
}

// SetTimeouts changes the upstream timeouts for requests that start from now on (zero fields
// take the defaults).
func (s *Server) SetTimeouts(t Timeouts) {
	t = t.withDefaults()
	s.timeouts.Store(&t)
}

// Timeouts returns the upstream timeouts in force.
func (s *Server) Timeouts() Timeouts { return *s.timeouts.Load() }
