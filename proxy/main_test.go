package proxy_test

import (
	"net/http"
	"os"
	"testing"
	"time"
)

// TestMain bounds every wait of the tests on the relay over HTTP: the helpers (post, codexGet)
// and the tests call it with http.DefaultClient, which never gives up on its own. A relay that
// hangs fails its test after clientTimeout instead of holding the run until go test's own.
func TestMain(m *testing.M) {
	http.DefaultClient.Timeout = clientTimeout
	os.Exit(m.Run())
}

// clientTimeout is far past what any test's request takes (a held request waits 30 s at most).
const clientTimeout = 2 * time.Minute
