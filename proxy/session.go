package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// The affinity key (prompt_cache_key, else the session-id header) is a string the client
// chooses, and the relay keeps it after the request: in the trace ring, the affinity map and
// the sealed-session table. The Codex CLI sends a UUID; a key past maxSessionKey bytes is kept
// as its first bytes (for the traces' reader) and a digest of the whole (so that two keys stay
// two sessions), never whole.
const (
	maxSessionKey  = 128
	sessionKeyHead = 64
)

// sessionKey is the bounded form of the client's affinity key s, in memory of its own (never a
// part of the body it came in).
func sessionKey(s string) string {
	if len(s) <= maxSessionKey {
		return strings.Clone(s)
	}
	sum := sha256.Sum256([]byte(s))
	return truncateUTF8(s, sessionKeyHead) + "…sha256:" + hex.EncodeToString(sum[:16])
}
