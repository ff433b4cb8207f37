package bench

import (
	"fmt"
	"io"
	"net/http"
	"strings"
)

// `bench keys`: what long client-chosen session keys cost the relay's memory (issue 30): each
// request carries a distinct prompt_cache_key of KeyBytes, half of them to a model nobody serves
// (404, no upstream call), half to one the account serves (its affinity is kept), and the relay
// keeps the key in its trace ring, affinity map and sealed-session table. The relay runs in
// this process with its defaults; the client streams each body from one small buffer, so the
// process's memory is the relay's (plus a baseline read first).

// KeysOptions configure Keys; zero values take the defaults.
type KeysOptions struct {
	Requests int // requests of each kind (default 150)
	KeyBytes int // bytes of each key (default 16 MiB)
}

// KeysResult is what `codexrelay bench keys --json` prints; memory in bytes.
type KeysResult struct {
	Requests    int   `json:"requests"` // of each kind: unserved model, served model
	KeyBytes    int   `json:"keyBytes"`
	NotFound    int   `json:"notFound"` // 404s of the unserved model
	Served      int   `json:"served"`   // 200s of the served one
	BaselineRSS int64 `json:"baselineRSSBytes"`
	PeakRSS     int64 `json:"peakRSSBytes"`
	IdleRSS     int64 `json:"idleRSSBytes"` // settled, once every request ended
	// TracesBytes is the size of GET /relay/traces?limit=50 after the run.
	TracesBytes int64 `json:"tracesBytes"`
}

// Keys runs the attack and reports the memory figures.
func Keys(opt KeysOptions) (KeysResult, error) {
	if opt.Requests <= 0 {
		opt.Requests = 150
	}
	if opt.KeyBytes <= 0 {
		opt.KeyBytes = 16 << 20
	}
	res := KeysResult{Requests: opt.Requests, KeyBytes: opt.KeyBytes}
	relay, base, stop, err := benchRelay()
	if err != nil {
		return res, err
	}
	defer stop()
	client := &http.Client{}
	chunk := strings.Repeat("k", 1<<20)
	post := func(model string, i int) (int, error) {
		head := `{"model":"` + model + `","input":"hi","prompt_cache_key":"`
		tail := fmt.Sprintf(`%d"}`, i)
		parts := []io.Reader{strings.NewReader(head)}
		for n := 0; n < opt.KeyBytes; n += len(chunk) {
			parts = append(parts, strings.NewReader(chunk[:min(len(chunk), opt.KeyBytes-n)]))
		}
		parts = append(parts, strings.NewReader(tail))
		req, err := http.NewRequest(http.MethodPost, base+"/responses", io.MultiReader(parts...))
		if err != nil {
			return 0, err
		}
		req.ContentLength = int64(len(head) + opt.KeyBytes + len(tail))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// One of each first, so that the baseline has the catalog and the pools made.
	for _, m := range []string{"nobody-serves-this", "bench-small"} {
		if _, err := post(m, -1); err != nil {
			return res, fmt.Errorf("bench keys: %w", err)
		}
	}
	res.BaselineRSS, _ = Settle(relay)
	if err := resetPeakRSS(0); err != nil {
		return res, err
	}
	for i := range opt.Requests {
		if code, err := post("nobody-serves-this", i); err != nil {
			return res, fmt.Errorf("bench keys: %w", err)
		} else if code == http.StatusNotFound {
			res.NotFound++
		}
		if code, err := post("bench-small", i); err != nil {
			return res, fmt.Errorf("bench keys: %w", err)
		} else if code == http.StatusOK {
			res.Served++
		}
	}
	res.PeakRSS = procStatus(0, "VmHWM")
	client.CloseIdleConnections()
	res.IdleRSS, _ = Settle(relay)
	resp, err := client.Get(strings.TrimSuffix(base, "/v1") + "/relay/traces?limit=50")
	if err != nil {
		return res, fmt.Errorf("bench keys: %w", err)
	}
	res.TracesBytes, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return res, nil
}

// Print writes the result as a table.
func (r KeysResult) Print(w io.Writer) {
	fmt.Fprintf(w, "Long session keys against the relay's memory: %d + %d requests, each with its own %s prompt_cache_key\n\n",
		r.Requests, r.Requests, mb(int64(r.KeyBytes)))
	fmt.Fprintf(w, "baseline                    RSS %s\n", mb(r.BaselineRSS))
	fmt.Fprintf(w, "during the run         peak RSS %s; %d answered 404 (model nobody serves), %d served\n", mb(r.PeakRSS), r.NotFound, r.Served)
	fmt.Fprintf(w, "idle after the run          RSS %s (baseline %+.1f MB)\n", mb(r.IdleRSS), float64(r.IdleRSS-r.BaselineRSS)/1e6)
	fmt.Fprintf(w, "GET /relay/traces?limit=50  %.1f kB\n", float64(r.TracesBytes)/1e3)
}
