package proxy

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A key of ordinary length is kept as it is; a long one as its head and a digest of the whole,
// bounded, valid UTF-8, and distinct from another long key with the same head.
func TestSessionKey(t *testing.T) {
	uuid := "019a2b3c-4d5e-7f80-9123-456789abcdef"
	if got := sessionKey(uuid); got != uuid {
		t.Fatalf("a UUID became %q", got)
	}
	long := strings.Repeat("é", 1000)
	a, b := sessionKey(long+"a"), sessionKey(long+"b")
	if a == b || len(a) > maxSessionKey || !utf8.ValidString(a) || !strings.HasPrefix(a, "éé") {
		t.Fatalf("long keys: %q, %q", a, b)
	}
	if sessionKey(long+"a") != a {
		t.Fatal("the same key gave two sessions")
	}
}
