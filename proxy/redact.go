package proxy

import upstreamtext "github.com/codexrelay/codexrelay/proxy/internal/redact"

// Text that comes from an upstream is untrusted: it is redacted where it enters the relay
// (proxy/internal/redact), before it is stored, logged, counted or relayed.

// redact returns text with every secret masked (redact.Bytes).
func redact(text []byte, secrets ...string) []byte { return upstreamtext.Bytes(text, secrets...) }

// redactString is redact for strings.
func redactString(text string, secrets ...string) string {
	return upstreamtext.String(text, secrets...)
}

// mask keeps the last four characters of a secret.
func mask(s string) string { return upstreamtext.Mask(s) }

// cleanText makes upstream text safe to store and show (redact.Clean).
func cleanText(s string, n int) string { return upstreamtext.Clean(s, n) }

func truncate(s string, n int) string { return upstreamtext.Truncate(s, n) }
