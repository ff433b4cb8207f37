package proxy

import (
	"context"
	"net/http"
	"time"
)

// CatalogOptions configure the model catalog.
type CatalogOptions struct {
	TTL                  time.Duration // MODELS_CACHE_MS, default 10 min
	StaleWhileRevalidate bool          // MODELS_STALE_WHILE_REVALIDATE
	StaleMaxAge          time.Duration // MODELS_STALE_MAX_AGE_MS, default 30 min
	RefreshInterval      time.Duration // MODELS_REFRESH_INTERVAL_MS; 0 = the TTL, negative = off
}

// catalog is the merged model list of every account. (Discovery lands with the catalog issue.)
type catalog struct {
	s   *Server
	opt CatalogOptions
}

func newCatalog(s *Server, opt CatalogOptions) *catalog { return &catalog{s: s, opt: opt} }

func (c *catalog) invalidate() {}

func (c *catalog) startSchedule() (stop func()) { return func() {} }

func (s *Server) catalogStats(time.Time) CatalogStats {
	return CatalogStats{AgeMs: -1, SWREnabled: s.catalog.opt.StaleWhileRevalidate,
		StaleMaxAgeMs: s.catalog.opt.StaleMaxAge.Milliseconds(), TTLMs: s.catalog.opt.TTL.Milliseconds()}
}

// resolveModel maps the requested model to the one sent upstream.
func (s *Server) resolveModel(ctx context.Context, x *exchange) *apiError { return nil }

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found",
		Message: "model " + truncate(r.PathValue("id"), 200) + " is not in the catalog"})
}
