// Package redact masks secrets in text that came from an upstream, and cleans it for storing
// and showing. Text that comes from an upstream is redacted where it enters the relay.
package redact

import (
	"bytes"
	"regexp"
	"strings"
	"unicode"
)

// Text that comes from an upstream (an error body, a failure event, a transport error, a
// model list's error) is untrusted: an upstream may echo the key it was sent ("Incorrect API
// key provided: sk-...") or dump its request headers. Such text is redacted where it enters
// the relay, before it is stored (account state, traces), logged, counted or relayed to a
// client, so that no client can read another account's key through the relay.

var secretShapes = []struct {
	re   *regexp.Regexp
	keep int // leading submatch to keep as it is (a prefix), 0 for none
}{
	// Authorization header values: "Bearer <token>", "Basic <creds>".
	{regexp.MustCompile(`(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=:-]{6,}`), 2},
	// JSON Web Tokens (OAuth access and id tokens).
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`), 0},
	// API keys with a known prefix: OpenAI (sk-, sk-proj-, sess-), Anthropic, the relay's own
	// local key (crk-), GitHub, Slack, Google.
	{regexp.MustCompile(`\b(?:sk|rk|pk|sess|crk)-[A-Za-z0-9_-]{12,}|\bgh[pousr]_[A-Za-z0-9]{20,}|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{30,}`), 0},
	// key = value pairs that name a secret.
	{regexp.MustCompile(`(?i)\b((?:api[_-]?key|access[_-]?token|refresh[_-]?token|id[_-]?token|client[_-]?secret|password|secret|x-api-key|authorization)["']?\s*[:=]\s*["']?(?:(?:bearer|basic)\s+)?)[^\s"',;&}]{6,}`), 1},
}

// Bytes returns text with every secret masked: the given secrets (the account's own
// credential) by their last four characters, anything shaped like an API key, a bearer
// token or a JWT likewise. Text without any is returned as it is, without a copy.
func Bytes(text []byte, secrets ...string) []byte {
	out := text
	copied := false
	for _, s := range secrets {
		if len(s) < 8 || !bytes.Contains(out, []byte(s)) {
			continue
		}
		out = bytes.ReplaceAll(out, []byte(s), []byte(Mask(s)))
		copied = true
	}
	for _, sh := range secretShapes {
		if !sh.re.Match(out) {
			continue
		}
		if !copied {
			out = bytes.Clone(out)
			copied = true
		}
		out = sh.re.ReplaceAllFunc(out, func(m []byte) []byte {
			prefix := 0
			if sh.keep > 0 {
				sub := sh.re.FindSubmatchIndex(m)
				prefix = sub[2*sh.keep+1]
			}
			if bytes.Contains(m[prefix:], []byte("****")) {
				return m // masked already
			}
			return append(append([]byte(nil), m[:prefix]...), Mask(string(m[prefix:]))...)
		})
	}
	return out
}

// String is Bytes for strings.
func String(text string, secrets ...string) string {
	b := Bytes([]byte(text), secrets...)
	return string(b)
}

// Mask keeps the last four characters of a secret, as API dashboards show keys.
func Mask(s string) string {
	if len(s) <= 8 {
		return "****"
	}
	return "****" + s[len(s)-4:]
}

// Clean makes upstream text safe to store and show: secrets masked, no control or invisible
// formatting characters, at most n bytes (on a rune boundary).
func Clean(s string, n int) string {
	s = String(s)
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > n {
		i := n
		for i > 0 && s[i]&0xC0 == 0x80 {
			i--
		}
		s = s[:i]
	}
	return s
}

// Truncate cuts s to n bytes, marking the cut with "...".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
