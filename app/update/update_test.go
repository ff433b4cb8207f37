package update

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func feed(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if !strings.HasPrefix(r.Header.Get("User-Agent"), "codexrelay/") {
			t.Errorf("User-Agent %q", r.Header.Get("User-Agent"))
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestCheckNewer(t *testing.T) {
	srv, hits := feed(t, 200, `{"tag_name":"v0.2.0","html_url":"https://example.test/r/v0.2.0","body":"x"}`)
	for _, c := range []struct {
		current string
		newer   bool
	}{{"0.1.0", true}, {"v0.1.9", true}, {"0.2.0", false}, {"0.3.0", false}, {"1.0.0", false}, {"(devel)", false}, {"", false}} {
		r, err := Check(ctx(t), srv.Client(), srv.URL, c.current)
		if err != nil {
			t.Fatal(err)
		}
		if r.Newer != c.newer || r.Version != "0.2.0" || r.URL != "https://example.test/r/v0.2.0" {
			t.Errorf("current %q: %+v, want newer %v", c.current, r, c.newer)
		}
	}
	if hits.Load() != 7 {
		t.Errorf("%d requests, want 7", hits.Load())
	}
}

func TestCheckBadFeeds(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		want   string
	}{
		{404, `{}`, "answered 404"},
		{200, `not json`, "not a release"},
		{200, `{"tag_name":"latest"}`, "names no version"},
	} {
		srv, _ := feed(t, c.status, c.body)
		_, err := Check(ctx(t), srv.Client(), srv.URL, "0.1.0")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d %s: %v, want %q", c.status, c.body, err, c.want)
		}
	}
	if _, err := Check(ctx(t), nil, "file:///etc/passwd", "0.1.0"); err == nil {
		t.Error("a file: feed was accepted")
	}
}

func TestCheckDropsOddReleaseURL(t *testing.T) {
	srv, _ := feed(t, 200, `{"tag_name":"9.0.0","html_url":"javascript:alert(1)"}`)
	r, err := Check(ctx(t), srv.Client(), srv.URL, "0.1.0")
	if err != nil || r.URL != "" || !r.Newer {
		t.Fatalf("%+v %v", r, err)
	}
}
