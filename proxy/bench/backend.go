package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codexrelay/codexrelay/proxy/internal/stat"
)

// The backend-calls phase of Proxy: what Codex's image generation costs the relay's memory
// across requests, and an image's added time. Codex posts an image edit with its images inline
// (tens of megabytes of base64 in JSON) and gets an image back the same way; several at once
// must not hold the sum of them.

// BackendResult is the backend-calls phase's figures.
type BackendResult struct {
	// Edits is Concurrent image edits of BodyBytes each at once; Answers Concurrent image
	// generations whose answers are AnswerBytes each. Answered counts the 200s, Unavailable the
	// 503s with a Retry-After (the relay's memory budget was spent), Failed anything else;
	// PeakRSSBytes is the relay process's peak meanwhile and RSSAfterBytes its settled memory
	// after, beside the bare proxy's peak in the same load.
	Edits   BackendLoad `json:"edits"`
	Answers BackendLoad `json:"answers"`
	// Image is one 4 MB image answer, sequentially: its median time direct and through the
	// relay, and what the relay adds.
	Image struct {
		Bytes    int     `json:"bytes"`
		DirectMs float64 `json:"directMs"`
		RelayMs  float64 `json:"relayMs"`
		AddedMs  float64 `json:"addedMs"`
	} `json:"image"`
}

// BackendLoad is one load of backend calls.
type BackendLoad struct {
	Concurrent       int   `json:"concurrent"`
	BodyBytes        int   `json:"bodyBytes,omitempty"`
	AnswerBytes      int   `json:"answerBytes,omitempty"`
	Answered         int   `json:"answered"`
	Unavailable      int   `json:"unavailable"`
	Failed           int   `json:"failed"`
	PeakRSSBytes     int64 `json:"peakRSSBytes"`
	RSSAfterBytes    int64 `json:"rssAfterBytes"`
	BarePeakRSSBytes int64 `json:"barePeakRSSBytes"`
}

const (
	backendConcurrent = 16
	backendBodyBytes  = 60 << 20
	imageBytes        = 4 << 20
)

// imageBody is an images/edits body of about n bytes: one inline image, as Codex sends it.
func imageBody(n int) []byte {
	var b bytes.Buffer
	b.Grow(n + 256)
	b.WriteString(`{"prompt":"edit it","model":"gpt-image-2","images":[{"image_url":"data:image/png;base64,`)
	b.Write(bytes.Repeat([]byte("iVBORw0KGgo"), (n-b.Len())/11))
	b.WriteString(`"}]}`)
	return b.Bytes()
}

// backend runs the phase against the relay process and the bare one.
func (r *proxyRun) backend() error {
	if err := r.startProxies(); err != nil { // when the loads did not run
		return err
	}
	res := &r.res.Backend
	edit := imageBody(backendBodyBytes)
	var err error
	load := func(p *Process, l *BackendLoad, path string, body func() io.Reader) error {
		r.client.CloseIdleConnections()
		if err := resetPeakRSS(p.PID); err != nil {
			return err
		}
		var answered, unavailable, failed atomic.Int64
		var wg sync.WaitGroup
		for range backendConcurrent {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodPost, p.URL+path, body())
				req.Header.Set("Content-Type", "application/json")
				resp, err := r.client.Do(req)
				if err != nil {
					failed.Add(1)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == 200:
					answered.Add(1)
				case resp.StatusCode == 503 && resp.Header.Get("Retry-After") != "":
					unavailable.Add(1)
				default:
					failed.Add(1)
				}
			}()
		}
		wg.Wait()
		l.Concurrent = backendConcurrent
		l.Answered, l.Unavailable, l.Failed = int(answered.Load()), int(unavailable.Load()), int(failed.Load())
		peak := procStatus(p.PID, "VmHWM")
		if p == r.bare {
			l.BarePeakRSSBytes = peak
			return nil
		}
		l.PeakRSSBytes = peak
		r.client.CloseIdleConnections()
		l.RSSAfterBytes, _, err = p.Settled()
		return err
	}
	edits := func() io.Reader { return bytes.NewReader(edit) }
	answers := func() io.Reader {
		return strings.NewReader(`{"prompt":"draw","model":"gpt-image-2","size":"` + strconv.Itoa(backendBodyBytes) + `"}`)
	}
	res.Edits.BodyBytes, res.Answers.AnswerBytes = len(edit), backendBodyBytes
	for _, p := range []*Process{r.rp, r.bare} {
		if err := load(p, &res.Edits, "/images/edits", edits); err != nil {
			return err
		}
		if err := load(p, &res.Answers, "/images/generations", answers); err != nil {
			return err
		}
	}
	// One 4 MB image, sequentially, direct and through the relay.
	res.Image.Bytes = imageBytes
	one := func(base string) (float64, error) {
		req, _ := http.NewRequest(http.MethodPost, base+"/images/generations",
			strings.NewReader(`{"prompt":"draw","model":"gpt-image-2","size":"`+strconv.Itoa(imageBytes)+`"}`))
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := r.client.Do(req)
		if err != nil {
			return 0, err
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n < imageBytes {
			return 0, fmt.Errorf("image: status %d, %d bytes", resp.StatusCode, n)
		}
		return stat.Ms(time.Since(start)), nil
	}
	var direct, relayed []float64
	for i := 0; i < 25; i++ {
		d, err := one(r.directURL)
		if err != nil {
			return fmt.Errorf("direct: %w", err)
		}
		v, err := one(r.rp.URL)
		if err != nil {
			return fmt.Errorf("relay: %w", err)
		}
		if i >= 5 { // warm-up
			direct, relayed = append(direct, d), append(relayed, v)
		}
	}
	res.Image.DirectMs, res.Image.RelayMs = stat.Quantile(direct, 0.5), stat.Quantile(relayed, 0.5)
	res.Image.AddedMs = res.Image.RelayMs - res.Image.DirectMs
	return err
}

// image answers the fake upstream's backend calls: an edit with a small image, a generation
// with an image of the size its body names (base64 in JSON, as the Images API answers).
func (u *benchUpstream) image(w http.ResponseWriter, r *http.Request, head []byte) {
	size := 1 << 10
	if i := bytes.Index(head, []byte(`"size":"`)); i >= 0 {
		rest := head[i+8:]
		size, _ = strconv.Atoi(string(rest[:bytes.IndexByte(rest, '"')]))
	}
	if strings.HasSuffix(r.URL.Path, "/images/edits") {
		size = 1 << 10
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(size+len(`{"created":1764460800,"data":[{"b64_json":""}]}`)))
	io.WriteString(w, `{"created":1764460800,"data":[{"b64_json":"`)
	chunk := bytes.Repeat([]byte("QUJD"), 16<<10)
	for left := size; left > 0; left -= len(chunk) {
		w.Write(chunk[:min(left, len(chunk))])
	}
	io.WriteString(w, `"}]}`)
}
