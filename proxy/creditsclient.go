package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/proxy/pool"
)

// The backend client of banked resets: the list read on the quota cadence, and the calls a
// redemption makes, with the account's credential (renewed once on a 401). What the backend
// answers is untrusted: its text is cleaned before it is stored or shown.

// resetCreditsURL is the reset-credit list for a Codex backend base URL, like usageURL:
// https://chatgpt.com/backend-api/codex -> https://chatgpt.com/backend-api/wham/rate-limit-reset-credits.
func resetCreditsURL(base string) string {
	return strings.TrimSuffix(strings.TrimRight(base, "/"), "/codex") + "/wham/rate-limit-reset-credits"
}

// refreshCredits reads m's credits when the policy reads them; a failed read keeps the last.
func (s *Server) refreshCredits(ctx context.Context, m *member) {
	if m.Kind != KindChatGPT || m.Disabled || s.ResetCreditsMode() == ResetCreditsOff {
		return
	}
	if _, err := s.fetchCredits(ctx, m); err != nil {
		s.log.Debug("banked resets read failed", "account", m.Name, "error", err)
	}
}

// refreshCreditsSoon reads m's credits in the background while the relay serves.
func (s *Server) refreshCreditsSoon(m *member) {
	if m.Kind != KindChatGPT || m.Disabled || s.serving.Load() == 0 || s.ResetCreditsMode() == ResetCreditsOff {
		return
	}
	go s.refreshCredits(context.Background(), m)
}

// fetchCredits reads m's credits and keeps them; it returns the available ones, soonest first.
func (s *Server) fetchCredits(ctx context.Context, m *member) ([]resetCredit, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	status, body, cred, err := s.creditCall(ctx, m, http.MethodGet, resetCreditsURL(m.BaseURL), nil)
	if err != nil {
		return nil, fmt.Errorf("banked resets: %s", describeTransportError(err, cred.Token))
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("banked resets: HTTP %d%s", status, upstreamSays(body, cred.Token))
	}
	now := s.now()
	list, count, err := parseCredits(body, now)
	if err != nil {
		return nil, err
	}
	view := ResetCredits{Available: count, FetchedAt: now}
	if len(list) > 0 {
		view.Title = list[0].title
		if !list[0].expiresAt.IsZero() {
			t := list[0].expiresAt
			view.NextExpiresAt = &t
		}
	}
	c := s.creditsOf(m)
	c.mu.Lock()
	c.known, c.view, c.credits = true, view, list
	c.mu.Unlock()
	s.changes.Raise()
	return list, nil
}

// parseCredits reads the list answer: the credits still available (by status, and not expired
// by now), soonest expiry first (one that never expires last), and the count available.
func parseCredits(body []byte, now time.Time) ([]resetCredit, int, error) {
	var v struct {
		Credits []struct {
			ID        string   `json:"id"`
			Status    string   `json:"status"`
			Title     string   `json:"title"`
			ExpiresAt flexTime `json:"expires_at"`
		} `json:"credits"`
		AvailableCount *int `json:"available_count"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, 0, fmt.Errorf("banked resets: the answer is not the credit list: %v", err)
	}
	var list []resetCredit
	for _, c := range v.Credits {
		if c.ID == "" || !strings.EqualFold(c.Status, "available") && c.Status != "" {
			continue
		}
		if t := time.Time(c.ExpiresAt); !t.IsZero() && !t.After(now) {
			continue
		}
		list = append(list, resetCredit{id: c.ID, status: c.Status, title: cleanText(c.Title, 80), expiresAt: time.Time(c.ExpiresAt)})
	}
	slices.SortStableFunc(list, func(a, b resetCredit) int { return compareExpiry(a.expiresAt, b.expiresAt) })
	count := len(list)
	if v.AvailableCount != nil && *v.AvailableCount >= 0 && len(v.Credits) == 0 {
		// A count without the list: the backend's word (nothing to redeem by id, though).
		count = *v.AvailableCount
	}
	return list, count, nil
}

// compareExpiry orders expiry times soonest first, a zero time (never expires) last.
func compareExpiry(a, b time.Time) int {
	switch {
	case a.Equal(b):
		return 0
	case a.IsZero():
		return 1
	case b.IsZero():
		return -1
	}
	return a.Compare(b)
}

// flexTime reads a timestamp sent as an RFC 3339 string, as epoch seconds or milliseconds
// (number or numeric string), or null.
type flexTime time.Time

func (t *flexTime) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" || s == `""` {
		*t = flexTime{}
		return nil
	}
	if unq, err := strconv.Unquote(s); err == nil {
		s = unq
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00"} {
			if v, err := time.Parse(layout, s); err == nil {
				*t = flexTime(v)
				return nil
			}
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("a timestamp that is neither RFC 3339 nor a number") // the upstream's text is not repeated
	}
	if f > 1e12 { // milliseconds
		f /= 1000
	}
	sec := int64(f)
	*t = flexTime(time.Unix(sec, int64((f-float64(sec))*1e9)).UTC())
	return nil
}

// creditCall is a call of a banked reset or a usage read to a ChatGPT account's backend: a side
// call of the pool's (pool.Call), its credential renewed once when the backend refuses it. It
// returns the answer's status and body (redacted when it is an error), and the credential of
// the last try.
func (s *Server) creditCall(ctx context.Context, m *member, method, url string, body []byte) (int, []byte, Credential, error) {
	var status int
	var answer []byte
	var err error
	out := s.pool.Call(ctx, m, "", func(cred Credential) *pool.Said {
		var w *pool.Said
		answer, w, err = s.sideCall(ctx, m, cred, method, url, body, 1<<20)
		status = http.StatusOK
		if w != nil {
			status = w.Status
		}
		return w
	})
	if out.Err != nil {
		return 0, nil, out.Cred, out.Err
	}
	return status, answer, out.Cred, err
}

// sideCall makes one call to m's upstream that is no client's request (the model listing, a
// usage or credit read): the answer's body, read up to limit, and when its status is not 2xx
// what it said (its body redacted where it enters).
func (s *Server) sideCall(ctx context.Context, m *member, cred Credential, method, url string, body []byte, limit int64) ([]byte, *pool.Said, error) {
	req, err := s.upstreamRequest(ctx, m, cred, method, url, "application/json")
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode/100 == 2 {
		return b, nil, nil
	}
	b = redact(b, cred.Token)
	w := pool.SaidHTTP(resp, b)
	return b, &w, nil
}

// upstreamSays is the cleaned message of an upstream's error answer, as ": message" ("" when
// it says nothing usable).
func upstreamSays(body []byte, secrets ...string) string {
	if len(bytes.TrimSpace(body)) == 0 {
		return ""
	}
	msg := pool.ParseErrorBody(body).Msg
	if msg = cleanText(redactString(msg, secrets...), 200); msg == "" {
		return ""
	}
	return ": " + msg
}
