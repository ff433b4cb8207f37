package proxy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/codexrelay/codexrelay/proxy/pool"
)

// QuotaInterval is how often ChatGPT accounts' usage is read in the background.
const QuotaInterval = 5 * time.Minute

// usageURL is the ChatGPT usage endpoint for a Codex backend base URL:
// https://chatgpt.com/backend-api/codex -> https://chatgpt.com/backend-api/wham/usage.
func usageURL(base string) string {
	return strings.TrimSuffix(strings.TrimRight(base, "/"), "/codex") + "/wham/usage"
}

// RefreshQuotas reads the usage of every enabled ChatGPT account at once. The last known
// figures stay in the stats while it runs and when an account's read fails.
func (s *Server) RefreshQuotas(ctx context.Context) {
	var wg sync.WaitGroup
	for _, m := range s.pool.List() {
		if m.Kind != KindChatGPT || m.Disabled {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.refreshQuota(ctx, m)
			s.refreshCredits(ctx, m) // banked resets, when the policy reads them (creditsclient.go)
		}()
	}
	wg.Wait()
}

// refreshQuota reads the usage of one ChatGPT account; a failed read keeps the last figures.
func (s *Server) refreshQuota(ctx context.Context, m *member) {
	q, err := s.fetchQuota(ctx, m)
	if err != nil {
		s.log.Debug("quota read failed", "account", m.Name, "error", err)
		return
	}
	s.pool.SetQuota(m, q)
}

// refreshQuotaSoon reads an enabled ChatGPT account's usage in the background, if the relay is
// serving (a CLI process that only changes settings reads none).
func (s *Server) refreshQuotaSoon(m *member) {
	if m.Kind != KindChatGPT || m.Disabled || s.serving.Load() == 0 {
		return
	}
	go func() {
		s.refreshQuota(context.Background(), m)
		s.refreshCredits(context.Background(), m)
	}()
}

func (s *Server) fetchQuota(ctx context.Context, m *member) (*Quota, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	// The credit calls' path: a 401 (a token the backend stopped taking before its expiry) is
	// tried once more with a renewed sign-in.
	status, body, cred, err := s.creditCall(ctx, m, http.MethodGet, usageURL(m.BaseURL), nil)
	if err != nil {
		return nil, fmt.Errorf("usage: %s", describeTransportError(err, cred.Token))
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("usage: HTTP %d", status)
	}
	return pool.ParseUsage(body, s.now())
}

// startQuotaLoop reads quotas now and every QuotaInterval until stop.
func (s *Server) startQuotaLoop() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		t := time.NewTicker(QuotaInterval)
		defer t.Stop()
		for {
			s.RefreshQuotas(ctx)
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return cancel
}
