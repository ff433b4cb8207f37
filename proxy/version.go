package proxy

import (
	"strconv"
	"strings"
)

// The client's catalog version. The ChatGPT backend hides the models gated above the
// client_version its catalog is asked with, so a Codex newer than the version the relay asks
// with would never see its newer models. The Codex CLI names its version when it reads the
// relay's catalog (GET /v1/models?client_version=V): a version newer than the one the catalog
// was read with becomes the one every later call names, and the catalog is refreshed (one
// refresh however many clients ask, and requests keep the stale catalog meanwhile when
// stale-while-revalidate is on). An older client never lowers it.

// clientVersion is the version the catalog is read with and every upstream call names.
func (c *catalog) clientVersion() string { return *c.version.Load() }

// askedWith notes the version a client read the catalog with. It reports whether that raised
// the version (the catalog is then marked for refresh).
func (c *catalog) askedWith(v string) bool {
	nv, ok := parseVersion(v)
	if !ok {
		return false
	}
	for {
		cur := c.version.Load()
		if cv, ok := parseVersion(*cur); ok && !newer(nv, cv) {
			return false
		}
		v := strings.Clone(v)
		if c.version.CompareAndSwap(cur, &v) {
			c.s.log.Info("a newer client read the catalog: reading it again with its version", "client_version", v)
			c.invalidate()
			return true
		}
	}
}

// parseVersion reads a version of one to four dot-separated numbers ("0.171.0"); anything
// else (a suffix, a header's worth of text) is not a version the relay will send on.
func parseVersion(v string) ([4]int, bool) {
	var out [4]int
	parts := strings.Split(v, ".")
	if len(v) > 32 || len(parts) > 4 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || p[0] == '+' {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

func newer(a, b [4]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}
