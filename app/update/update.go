// Package update asks a release feed whether a newer Codex Relay exists. It makes a network call
// only when asked: the app calls it only when the user turned the update-check setting on.
//
// The feed is a GitHub-style "latest release" document (GET
// https://api.github.com/repos/OWNER/REPO/releases/latest): {"tag_name":"v1.2.0","html_url":"..."}.
// Any server that answers that shape works, which is how the tests use a loopback server.
package update

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultFeed is the project's release feed.
const DefaultFeed = "https://api.github.com/repos/codexrelay/codexrelay/releases/latest"

// A Release is what the feed says about the latest release.
type Release struct {
	Version string // the tag without its "v"
	URL     string // the release's page
	Newer   bool   // newer than the running version
}

// maxFeed bounds what is read of the feed's answer.
const maxFeed = 1 << 20

// CheckFeedURL refuses a feed that is not an absolute http(s) URL.
func CheckFeedURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("must be an http or https URL, e.g. " + DefaultFeed)
	}
	return nil
}

// Check asks feed for the latest release and compares it with current (a version such as
// "0.1.0" or "v0.1.0"; a development build, "(devel)" or "", is never older than a release so it
// is never told to update). client nil is a client with a 10 s timeout.
func Check(ctx context.Context, client *http.Client, feed, current string) (Release, error) {
	if err := CheckFeedURL(feed); err != nil {
		return Release{}, fmt.Errorf("update feed %w", err)
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, feed, nil)
	if err != nil {
		return Release{}, err
	}
	req.Header.Set("Accept", "application/vnd.github+json, application/json")
	req.Header.Set("User-Agent", "codexrelay/"+strings.TrimPrefix(current, "v"))
	resp, err := client.Do(req)
	if err != nil {
		return Release{}, fmt.Errorf("cannot reach the update feed: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Release{}, fmt.Errorf("the update feed answered %s", resp.Status)
	}
	var doc struct {
		Tag string `json:"tag_name"`
		URL string `json:"html_url"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxFeed)).Decode(&doc); err != nil {
		return Release{}, fmt.Errorf("the update feed's answer is not a release: %w", err)
	}
	latest, ok := parse(doc.Tag)
	if !ok {
		return Release{}, fmt.Errorf("the update feed names no version (tag_name %q)", truncate(doc.Tag))
	}
	r := Release{Version: strings.TrimPrefix(doc.Tag, "v"), URL: doc.URL}
	if u, err := url.Parse(doc.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		r.URL = "" // never hand an odd scheme to a browser
	}
	if cur, ok := parse(current); ok {
		r.Newer = less(cur, latest)
	}
	return r, nil
}

// parse reads "v1.2.3" or "1.2.3" (a pre-release suffix "-rc1" is ignored for ordering, a
// pre-release tag counts as its release).
func parse(v string) ([3]int, bool) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) == 0 || len(parts) > 3 {
		return [3]int{}, false
	}
	var out [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return [3]int{}, false
		}
		out[i] = n
	}
	return out, true
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
