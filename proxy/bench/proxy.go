package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
)

// ProxyOptions configure Proxy; zero values take the defaults.
type ProxyOptions struct {
	SmallRequests int // sequential small requests per side (default 5000)
	LargeRequests int // 1.16 MB streamed requests per side (default 100)
	StreamEvents  int // events in the long stream (default 2000)
	Concurrent    int // concurrent streams (default 500)
	// LargeConcurrent is the larger load's concurrent streams (default 2000); Rounds is how
	// many times each load is repeated (default 5).
	LargeConcurrent, Rounds int
	// IdleWait is how long after the loads the relay's memory is read again (default 60 s).
	IdleWait     time.Duration
	SoakRequests int // sequential requests for the memory soak (default 20000)
	// ConversationTurns is the turns of the conversation phase (default 20, about 1.2 MB of
	// history at the end) and ConversationRounds how many times it is played (default 5).
	ConversationTurns, ConversationRounds int
	// Ledger, when set, opens a usage ledger for the ledger phase (skipped without one).
	Ledger LedgerSink
	// The budget phase (budget.go): ReplayBytes is the size of the conversation a Chat
	// account's Responses client makes (default 60 MiB) and Continuations the concurrent
	// requests that continue it by previous_response_id (default 16); Uploads are slow uploads
	// (default 8) each declaring UploadBytes (default 60 MiB) and trickling for UploadFor
	// (default 10 s) beside small requests; RemakeTurns the concurrent turns (default 16) of a
	// conversation compacted on an account that then rests, whose compaction request is about
	// RemakeBytes (default 32 MiB).
	ReplayBytes, Continuations int
	Uploads, UploadBytes       int
	UploadFor                  time.Duration
	RemakeTurns, RemakeBytes   int
	// Only, when not empty, names the phases to run (ProxyPhases), in their usual order; the
	// others are left out of the result.
	Only []string
	// StartProcess, when set, starts a proxy in a process of its own in front of upstream (a
	// base URL ending in /v1): kind "relay" is the relay with one API-key account there, kind
	// "bare" a bare net/http/httputil.ReverseProxy, the floor the relay's memory is compared
	// with; the budget phase's kinds "chat" and "compaction" are the relays of RelayFor. The loads and the soak then go through those processes, so that the memory and
	// goroutine figures are theirs alone (RSS is a figure per process), not those of one
	// process holding the client and the upstream too.
	StartProcess func(kind, upstream string) (*Process, error)
}

// Process is a proxy running apart for Proxy (see ServeProcess).
type Process struct {
	URL string // base URL, ending in /v1
	PID int
	// Settled reports the process's Settle figures, so that idle counts compare like with like.
	Settled func() (rss int64, goroutines int, err error)
	Stop    func()
}

// BareProxy is the floor of `bench proxy`'s memory comparison: a plain
// net/http/httputil.ReverseProxy to upstream (a base URL ending in /v1) with its defaults,
// which flushes event streams as they come.
func BareProxy(upstream string) http.Handler {
	u, err := url.Parse(strings.TrimSuffix(upstream, "/v1"))
	if err != nil {
		panic(err)
	}
	return httputil.NewSingleHostReverseProxy(u)
}

// Relay is the relay Proxy measures, in its process or in one of its own: one API-key account
// at upstream (a base URL ending in /v1), no scheduled catalog refresh.
func Relay(upstream string) *proxy.Server {
	relay := proxy.New(proxy.Options{Catalog: proxy.CatalogOptions{RefreshInterval: -1}})
	// The ChatGPT account, second, takes the backend calls (image generation) alone.
	relay.SetAccounts([]proxy.Account{{Name: "bench", Kind: proxy.KindOpenAI, BaseURL: upstream, Credentials: proxy.Static{Token: "sk-bench"}},
		{Name: "bench-images", Kind: proxy.KindChatGPT, BaseURL: upstream, Credentials: proxy.Static{Token: "bench-chatgpt-token", AccountID: "acct-bench"}}})
	return relay
}

// Settle closes the relay's idle upstream connections and reports this process's resident
// memory once its garbage is collected and freed memory handed back to the system, so that two
// readings compare what is alive rather than what the collector kept, and its goroutine count.
func Settle(s *proxy.Server) (rss int64, goroutines int) {
	s.CloseIdleConnections()
	debug.FreeOSMemory()
	return procStatus(0, "VmRSS"), runtime.NumGoroutine()
}

// ProxyResult is what `codexrelay bench proxy --json` prints.
type ProxyResult struct {
	Small struct {
		DirectP50Us float64 `json:"directP50Us"`
		RelayP50Us  float64 `json:"relayP50Us"`
		AddedP50Us  float64 `json:"addedP50Us"`
		AddedP99Us  float64 `json:"addedP99Us"`
	} `json:"small"`
	Large struct {
		Bytes        int     `json:"bytes"`
		DirectMs     float64 `json:"directMs"`
		RelayMs      float64 `json:"relayMs"`
		AddedMs      float64 `json:"addedMs"`
		FirstByteMs  float64 `json:"relayFirstByteMs"`
		ParseBuildMs float64 `json:"parseBuildMs"` // one parse-and-build pass of the same body (PassOnce)
		AddedPerPass float64 `json:"addedPerPass"` // addedMs / parseBuildMs (target: at most 2)
	} `json:"large"`
	Stream struct {
		Events          int     `json:"events"`
		EventDelayP50Us float64 `json:"eventDelayP50Us"`
		EventDelayP99Us float64 `json:"eventDelayP99Us"`
		DirectDelayP50  float64 `json:"directDelayP50Us"`
	} `json:"stream"`
	// Concurrent is Concurrent streams at once, Rounds times; ConcurrentLarge the same with
	// LargeConcurrent streams.
	Concurrent      LoadResult `json:"concurrent"`
	ConcurrentLarge LoadResult `json:"concurrentLarge"`
	// Idle is the relay's resident memory before the loads and IdleWait after them.
	Idle struct {
		RSSBeforeBytes int64   `json:"rssBeforeBytes"`
		RSSAfterBytes  int64   `json:"rssAfterBytes"`
		AfterSeconds   float64 `json:"afterSeconds"`
	} `json:"idle"`
	Soak struct {
		Requests            int   `json:"requests"`
		RSSAfter1000Bytes   int64 `json:"rssAfter1000Bytes"`
		RSSAfterAllBytes    int64 `json:"rssAfterAllBytes"`
		GoroutinesIdle      int   `json:"goroutinesIdle"`
		GoroutinesAfterSoak int   `json:"goroutinesAfterSoak"`
	} `json:"soak"`
	// Conversation compares a growing conversation over HTTP and over WebSocket.
	Conversation ConversationResult `json:"conversation"`
	// Ledger is what recording requests in the usage ledger costs.
	Ledger LedgerResult `json:"ledger"`
	// Sealed is what tracking account-sealed items costs.
	Sealed SealedResult `json:"sealed"`
	// Rotation is the large request rotated, leaving out what the first account sealed.
	Rotation RotationResult `json:"rotation"`
	// Backend is Codex's image calls: memory across concurrent ones, one image's added time.
	Backend BackendResult `json:"backend"`
	// Budget is what a conversation the relay builds and keeps costs its memory budget.
	Budget BudgetResult `json:"budget"`
	// Phases are the phases that ran (ProxyOptions.Only).
	Phases []string `json:"phases"`
}

// LoadResult is one load: Streams concurrent streams, Rounds times, through the relay and
// through the bare proxy.
type LoadResult struct {
	Streams int `json:"streams"`
	Rounds  int `json:"rounds"`
	Errors  int `json:"errors"` // streams that did not complete, through the relay
	// PeakRSSBytes is the relay process's peak during the load when StartProcess was set
	// (RelayProcess), else that of the one process holding client, relay and upstream;
	// BarePeakRSSBytes the bare proxy's in the same conditions.
	PeakRSSBytes     int64   `json:"peakRSSBytes"`
	BarePeakRSSBytes int64   `json:"barePeakRSSBytes"`
	BareErrors       int     `json:"bareErrors"`
	PeakToBare       float64 `json:"peakToBare"`
	RelayProcess     bool    `json:"relayProcess"`
	// RSSBeforeBytes and BareRSSBeforeBytes are each process's resident memory as its load
	// began, and AddedToBare the ratio of what the load added to each (peak less that). Both
	// processes are the one codexrelay binary, nearly all of it resident (about 30 MB of file
	// pages, GUI included) before any request: PeakToBare counts that on both sides, while a
	// bare proxy built apart (about 9 MB resident) does not, and AddedToBare compares what the
	// streams cost either way.
	RSSBeforeBytes     int64   `json:"rssBeforeBytes"`
	BareRSSBeforeBytes int64   `json:"bareRSSBeforeBytes"`
	AddedToBare        float64 `json:"addedToBare"`
}

// Proxy sends the same requests to an in-process fake upstream directly and through a
// relay on loopback, and measures what the relay adds: small requests, the 1.16 MB request, a
// long event stream, loads of concurrent streams against a bare proxy, the idle memory after
// them and a soak. Without StartProcess, client, relay and upstream share one process, so the
// memory figures are an upper bound for the relay.
func Proxy(opt ProxyOptions) (ProxyResult, error) {
	opt.defaults()
	var res ProxyResult
	for _, name := range opt.Only {
		if !slices.Contains(ProxyPhases(), name) {
			return res, fmt.Errorf("no phase %q in bench proxy: its phases are %s", name, strings.Join(ProxyPhases(), ", "))
		}
	}
	up, err := newBenchUpstream()
	if err != nil {
		return res, err
	}
	defer up.close()
	relay := Relay(up.url + "/v1")
	relayURL, stop, err := serveOnLoopback(relay)
	if err != nil {
		return res, err
	}
	defer stop()
	r := &proxyRun{
		opt: opt, res: &res, up: up, relay: relay,
		relayURL:  relayURL,
		directURL: up.url + "/v1",
		client:    &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, DisableCompression: true}},
	}
	defer func() {
		if r.rp != nil {
			r.rp.Stop()
			r.bare.Stop()
		}
	}()
	for _, phase := range r.phases() {
		if len(opt.Only) > 0 && !slices.Contains(opt.Only, phase.name) {
			continue
		}
		res.Phases = append(res.Phases, phase.name)
		if err := phase.run(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// namedPhase is a phase of Proxy.
type namedPhase struct {
	name string
	run  func() error
}

// phases are Proxy's phases, in order.
func (r *proxyRun) phases() []namedPhase {
	return []namedPhase{{"small", r.small}, {"ledger", r.ledger}, {"sealed", r.sealed}, {"large", r.large},
		{"rotation", r.rotation}, {"stream", r.stream}, {"conversation", r.conversation}, {"loads", r.loads},
		{"backend", r.backend}, {"soak", r.soak}, {"budget", r.budget}}
}

// ProxyPhases are the names of Proxy's phases, in order (ProxyOptions.Only).
func ProxyPhases() []string {
	var names []string
	for _, p := range (&proxyRun{}).phases() {
		names = append(names, p.name)
	}
	return names
}

func (opt *ProxyOptions) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&opt.SmallRequests, 5000)
	def(&opt.LargeRequests, 100)
	def(&opt.StreamEvents, 2000)
	def(&opt.Concurrent, 500)
	def(&opt.LargeConcurrent, 2000)
	def(&opt.Rounds, 5)
	def(&opt.SoakRequests, 20000)
	def(&opt.ConversationTurns, 20)
	def(&opt.ConversationRounds, 5)
	def(&opt.ReplayBytes, 60<<20)
	def(&opt.Continuations, 16)
	def(&opt.Uploads, 8)
	def(&opt.UploadBytes, 60<<20)
	def(&opt.RemakeTurns, 16)
	def(&opt.RemakeBytes, 32<<20)
	if opt.UploadFor <= 0 {
		opt.UploadFor = 10 * time.Second
	}
	if opt.IdleWait <= 0 {
		opt.IdleWait = 60 * time.Second
	}
}

// proxyRun is one run of Proxy: its phases fill res in turn.
type proxyRun struct {
	opt                 ProxyOptions
	res                 *ProxyResult
	up                  *benchUpstream
	relay               *proxy.Server
	relayURL, directURL string
	client              *http.Client
	// rp and bare are the proxies the loads and the soak go through (set by loads, both or
	// neither; Proxy stops them).
	rp, bare *Process
}

const smallBody = `{"model":"bench-small","input":"ping","stream":false}`

func (r *proxyRun) post(base, body string) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodPost, base+"/responses", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return r.client.Do(req)
}

// drain reads a whole answer and fails unless it was a 200.
func drain(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// small times small non-streamed requests, alternating sides.
func (r *proxyRun) small() error {
	for i := 0; i < 200; i++ { // warm-up: connections, catalog
		if err := drain(r.post(r.relayURL, smallBody)); err != nil {
			return fmt.Errorf("relay: %w", err)
		}
		drain(r.post(r.directURL, smallBody))
	}
	var direct, relayed []float64
	for i := 0; i < r.opt.SmallRequests; i++ {
		for side := 0; side < 2; side++ {
			base := r.directURL
			if (i+side)%2 == 1 {
				base = r.relayURL
			}
			t0 := time.Now()
			if err := drain(r.post(base, smallBody)); err != nil {
				return err
			}
			d := float64(time.Since(t0).Nanoseconds()) / 1e3
			if base == r.relayURL {
				relayed = append(relayed, d)
			} else {
				direct = append(direct, d)
			}
		}
	}
	s := &r.res.Small
	s.DirectP50Us = quantile(direct, 0.5)
	s.RelayP50Us = quantile(relayed, 0.5)
	s.AddedP50Us = s.RelayP50Us - s.DirectP50Us
	s.AddedP99Us = quantile(relayed, 0.99) - quantile(direct, 0.99)
	return nil
}

// large times the 1.16 MB Codex-shaped streamed request, and the unit of its target: one
// pass of parse-and-build of the same body as `bench serialization` measures it. The three are
// interleaved, so that a drift of the machine's speed moves them together.
func (r *proxyRun) large() error {
	large := string(testkit.SyntheticResponsesBody(10000))
	l := &r.res.Large
	l.Bytes = len(large)
	var ld, lr, lfb, passes []float64
	for i := 0; i < r.opt.LargeRequests+3; i++ {
		if i%8 == 0 {
			runtime.GC()
		}
		pass := PassOnce([]byte(large))
		runtime.GC() // the pass's garbage, outside the timings
		order := []string{r.directURL, r.relayURL}
		if i%2 == 1 {
			order[0], order[1] = r.relayURL, r.directURL
		}
		for _, base := range order {
			t0 := time.Now()
			resp, err := r.post(base, large)
			if err != nil {
				return err
			}
			fb := time.Since(t0)
			if err := drain(resp, nil); err != nil {
				return err
			}
			if i < 3 {
				continue
			}
			total := float64(time.Since(t0).Nanoseconds()) / 1e6
			if base == r.relayURL {
				lr = append(lr, total)
				lfb = append(lfb, float64(fb.Nanoseconds())/1e6)
			} else {
				ld = append(ld, total)
			}
		}
		if i >= 3 {
			passes = append(passes, pass)
		}
	}
	l.DirectMs, l.RelayMs = quantile(ld, 0.5), quantile(lr, 0.5)
	l.AddedMs = l.RelayMs - l.DirectMs
	l.FirstByteMs = quantile(lfb, 0.5)
	if l.ParseBuildMs = quantile(passes, 0.5); l.ParseBuildMs > 0 {
		l.AddedPerPass = l.AddedMs / l.ParseBuildMs
	}
	return nil
}

// stream times a long stream of small events: the delay from the upstream's write to the
// client's read.
func (r *proxyRun) stream() error {
	dd, err := r.streamDelays(r.directURL)
	if err != nil {
		return err
	}
	rd, err := r.streamDelays(r.relayURL)
	if err != nil {
		return err
	}
	s := &r.res.Stream
	s.Events = len(rd)
	s.EventDelayP50Us, s.EventDelayP99Us = quantile(rd, 0.5), quantile(rd, 0.99)
	s.DirectDelayP50 = quantile(dd, 0.5)
	return nil
}

func (r *proxyRun) streamDelays(base string) ([]float64, error) {
	body := fmt.Sprintf(`{"model":"bench-ticks","input":"go","stream":true,"metadata":{"events":"%d"}}`, r.opt.StreamEvents)
	resp, err := r.post(base, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var delays []float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Bytes()
		if i := bytes.Index(line, []byte(`"t":`)); i >= 0 {
			j := i + 4
			k := j
			for k < len(line) && line[k] >= '0' && line[k] <= '9' {
				k++
			}
			sent, _ := strconv.ParseInt(string(line[j:k]), 10, 64)
			delays = append(delays, float64(time.Since(r.up.epoch).Nanoseconds()-sent)/1e3)
		}
	}
	return delays, sc.Err()
}

// loads runs loads of concurrent streams through the relay, and through a bare ReverseProxy
// in front of the same upstream, each in its own process when one can be started, and reads
// the relay's memory before them and IdleWait after them. The peak is that of the load: the
// earlier phases (the parse-and-build passes run with the collector paused) do not count. The
// proxies stay up for the soak.
func (r *proxyRun) loads() (err error) {
	if err := r.startProxies(); err != nil {
		return err
	}
	res, opt := r.res, r.opt
	res.Idle.RSSBeforeBytes = procStatus(r.rp.PID, "VmRSS")
	loads := []struct {
		r *LoadResult
		n int
	}{{&res.Concurrent, opt.Concurrent}, {&res.ConcurrentLarge, opt.LargeConcurrent}}
	for _, l := range loads {
		l.r.Streams, l.r.Rounds, l.r.RelayProcess = l.n, opt.Rounds, opt.StartProcess != nil
		if l.r.Errors, l.r.RSSBeforeBytes, l.r.PeakRSSBytes, err = r.streams(r.rp, l.n); err != nil {
			return err
		}
	}
	// The relay is left alone from here: its memory is read again IdleWait after the loads.
	// The bare proxy's loads run meanwhile (its process, not the relay's).
	loadsEnd := time.Now()
	for _, l := range loads {
		if l.r.BareErrors, l.r.BareRSSBeforeBytes, l.r.BarePeakRSSBytes, err = r.streams(r.bare, l.n); err != nil {
			return err
		}
		if l.r.BarePeakRSSBytes > 0 {
			l.r.PeakToBare = float64(l.r.PeakRSSBytes) / float64(l.r.BarePeakRSSBytes)
		}
		if added := l.r.BarePeakRSSBytes - l.r.BareRSSBeforeBytes; added > 0 {
			l.r.AddedToBare = float64(l.r.PeakRSSBytes-l.r.RSSBeforeBytes) / float64(added)
		}
	}
	time.Sleep(time.Until(loadsEnd.Add(opt.IdleWait)))
	res.Idle.RSSAfterBytes = procStatus(r.rp.PID, "VmRSS")
	res.Idle.AfterSeconds = time.Since(loadsEnd).Seconds()
	return nil
}

// startProxies sets r.rp and r.bare, once: the in-process relay and a bare proxy on a port of
// this process, or both in processes of their own with StartProcess; both warmed up.
func (r *proxyRun) startProxies() error {
	if r.rp != nil {
		return nil
	}
	if r.opt.StartProcess == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: BareProxy(r.directURL)}
		go srv.Serve(ln)
		relay := r.relay
		r.rp = &Process{URL: r.relayURL, Settled: func() (int64, int, error) {
			rss, n := Settle(relay)
			return rss, n, nil
		}, Stop: func() {}}
		r.bare = &Process{URL: "http://" + ln.Addr().String() + "/v1", Settled: func() (int64, int, error) {
			http.DefaultTransport.(*http.Transport).CloseIdleConnections() // the bare proxy's
			rss, n := Settle(relay)
			return rss, n, nil
		}, Stop: func() { srv.Close() }}
	} else {
		rp, err := r.opt.StartProcess("relay", r.directURL)
		if err != nil {
			return fmt.Errorf("starting the relay process: %w", err)
		}
		bare, err := r.opt.StartProcess("bare", r.directURL)
		if err != nil {
			rp.Stop()
			return fmt.Errorf("starting the bare proxy process: %w", err)
		}
		r.rp, r.bare = rp, bare
	}
	for _, p := range []*Process{r.rp, r.bare} {
		if err := drain(r.post(p.URL, smallBody)); err != nil { // its catalog, its connections
			return fmt.Errorf("warming up %s: %w", p.URL, err)
		}
	}
	r.client.CloseIdleConnections()
	time.Sleep(200 * time.Millisecond)
	return nil
}

// streams runs n concurrent streams through p, Rounds times, and reports how many did not
// complete, p's resident memory as they began and its peak meanwhile.
func (r *proxyRun) streams(p *Process, n int) (errors int, before, peak int64, err error) {
	r.client.CloseIdleConnections()
	// Each load starts from a settled process, so that neither side's peak carries what the
	// collector kept from its previous load (the relay's loads ran first, the bare proxy's
	// after, each process its own way back down).
	if p.Settled != nil {
		if _, _, err := p.Settled(); err != nil {
			return 0, 0, 0, err
		}
	}
	before = procStatus(p.PID, "VmRSS")
	if err := resetPeakRSS(p.PID); err != nil {
		return 0, 0, 0, err
	}
	var errs atomic.Int64
	for range r.opt.Rounds {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				resp, err := r.post(p.URL, `{"model":"bench-slow","input":"go","stream":true}`)
				if err == nil && resp.StatusCode == 200 {
					b, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					if rerr == nil && bytes.Contains(b, []byte("response.completed")) {
						return
					}
				} else if err == nil {
					resp.Body.Close()
				}
				errs.Add(1)
			}()
		}
		close(start)
		wg.Wait()
	}
	// A client that went away: the proxies see their connections close.
	r.client.CloseIdleConnections()
	return int(errs.Load()), before, procStatus(p.PID, "VmHWM"), nil
}

// soak reads the relay's memory and goroutines over many sequential requests.
func (r *proxyRun) soak() (err error) {
	settle := func() (int64, int) {
		rss, n, serr := r.rp.Settled()
		if serr != nil && err == nil {
			err = serr
		}
		return rss, n
	}
	if err := r.startProxies(); err != nil { // when the loads did not run
		return err
	}
	s := &r.res.Soak
	r.client.CloseIdleConnections()
	time.Sleep(100 * time.Millisecond) // the relay sees the connections close
	_, s.GoroutinesIdle = settle()
	s.Requests = r.opt.SoakRequests
	for i := 1; i <= r.opt.SoakRequests; i++ {
		if err := drain(r.post(r.rp.URL, `{"model":"bench-small","input":"ping","stream":true}`)); err != nil {
			return err
		}
		if i == 1000 {
			s.RSSAfter1000Bytes, _ = settle()
		}
	}
	s.RSSAfterAllBytes, _ = settle()
	r.client.CloseIdleConnections()
	for i := 0; i < 50; i++ {
		if _, s.GoroutinesAfterSoak = settle(); s.GoroutinesAfterSoak <= s.GoroutinesIdle {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	return nil
}

// resetPeakRSS starts the peak resident memory (VmHWM) of process pid (0: this one) over from
// its current figure (clear_refs), this process first handing freed memory back. Elsewhere than
// on Linux there are no memory figures and nothing to reset.
func resetPeakRSS(pid int) error {
	if runtime.GOOS != "linux" {
		return nil
	}
	if pid == 0 {
		debug.FreeOSMemory()
	}
	if err := os.WriteFile(procFile(pid, "clear_refs"), []byte("5"), 0); err != nil {
		return fmt.Errorf("resetting the peak RSS: %w", err)
	}
	return nil
}

func procFile(pid int, name string) string {
	if pid == 0 {
		return "/proc/self/" + name
	}
	return "/proc/" + strconv.Itoa(pid) + "/" + name
}

// procStatus reads a memory figure (in bytes) of process pid (0: this one) from its status
// file; 0 where there is none.
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(procFile(pid, "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line[len(field)+1:])
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n * 1024
			}
		}
	}
	return 0
}

// benchUpstream is the fake upstream of the benchmark.
type benchUpstream struct {
	srv   *http.Server
	url   string
	epoch time.Time
}

func newBenchUpstream() (*benchUpstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &benchUpstream{url: "http://" + ln.Addr().String(), epoch: time.Now()}
	u.srv = &http.Server{Handler: http.HandlerFunc(u.serve)}
	go u.srv.Serve(ln)
	return u, nil
}

// benchDone is the terminal event of every answer the fake upstream streams; its response
// object is the answer of a non-streamed request.
var benchDone = []byte(`{"type":"response.completed","response":{"id":"resp_b","object":"response","status":"completed","output":[]}}`)

// benchDoneResponse is benchDone's response object.
func benchDoneResponse() []byte {
	return benchDone[len(`{"type":"response.completed","response":`) : len(benchDone)-1]
}

// serve answers the model list, then each request by its model: the rotation's and the sealed
// benchmark's accounts, a whole answer, or a stream.
func (u *benchUpstream) serve(w http.ResponseWriter, r *http.Request) {
	// Like a real upstream, read the whole body, but keep only its head (model and stream
	// come first): a fresh megabyte per request here would add collector noise to both sides.
	head := make([]byte, 4096)
	n, _ := io.ReadFull(r.Body, head)
	body := head[:n]
	if !bytes.Contains(body, []byte(`"model":"bench-rotate"`)) {
		io.Copy(io.Discard, r.Body)
	}
	if strings.HasSuffix(r.URL.Path, "/images/generations") || strings.HasSuffix(r.URL.Path, "/images/edits") {
		u.image(w, r, body)
		return
	}
	if r.Method == http.MethodGet {
		io.WriteString(w, `{"object":"list","data":[{"id":"bench-small"},{"id":"bench-ticks"},{"id":"bench-slow"},{"id":"bench-sealed"},{"id":"bench-rotate"},{"id":"gpt-5-codex"}]}`)
		return
	}
	model := ""
	if i := bytes.Index(body, []byte(`"model":"`)); i >= 0 {
		rest := body[i+9:]
		model = string(rest[:bytes.IndexByte(rest, '"')])
	}
	switch {
	case model == "bench-rotate":
		u.rotate(w, r, body, n < len(head))
	case model == "bench-sealed":
		u.sealed(w, body)
	case !bytes.Contains(body, []byte(`"stream":true`)):
		w.Header().Set("Content-Type", "application/json")
		w.Write(benchDoneResponse())
	default:
		u.stream(w, model, body)
	}
}

// rotate answers the rotation benchmark: account a answers the small request (whole: small)
// with the reasoning it seals, and is at its limit for the large one; the next account refuses
// what a sealed.
func (u *benchUpstream) rotate(w http.ResponseWriter, r *http.Request, body []byte, small bool) {
	rest, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Header.Get("Authorization") == "Bearer sk-a" && small:
		// The small request: a's answer, with the reasoning it seals.
		out := ""
		for i := range rotationSealed {
			out += rotationItem(i) + ","
		}
		io.WriteString(w, `{"id":"resp_a","object":"response","status":"completed","output":[`+out+`{"type":"message","id":"m","role":"assistant","content":[]}]}`)
	case r.Header.Get("Authorization") == "Bearer sk-a":
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"limit"}}`)
	case bytes.Contains(body, []byte("gAAAABsealedA")) || bytes.Contains(rest, []byte("gAAAABsealedA")):
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"invalid_encrypted_content","message":"The encrypted content could not be verified."}}`)
	default:
		w.Write(benchDoneResponse())
	}
}

// sealed answers the sealed benchmark: it seals its reasoning to its key and refuses content
// another account sealed.
func (u *benchUpstream) sealed(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	if bytes.Contains(body, []byte("gAAAABforeign")) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"invalid_encrypted_content","message":"The encrypted content gAAAABfo...= could not be verified."}}`)
		return
	}
	out := sealedOwn + ","
	if bytes.Contains(body, []byte("spawn_agent")) {
		out += sealedSpawnOutput + "," // the multi-agent turn: the account's own call again
	}
	io.WriteString(w, `{"id":"resp_s","object":"response","status":"completed","output":[`+out+`{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"ok"}]}]}`)
}

// stream answers a streamed request: bench-ticks a stream of timed deltas (as many as its
// "events" member says), bench-slow a slow one, any other model one delta.
func (u *benchUpstream) stream(w http.ResponseWriter, model string, body []byte) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	event := func(data []byte) {
		w.Write([]byte("event: x\ndata: "))
		w.Write(data)
		w.Write([]byte("\n\n"))
		fl.Flush()
	}
	switch model {
	case "bench-ticks":
		n := 2000
		if i := bytes.Index(body, []byte(`"events":"`)); i >= 0 {
			rest := body[i+10:]
			n, _ = strconv.Atoi(string(rest[:bytes.IndexByte(rest, '"')]))
		}
		for i := 0; i < n; i++ {
			event([]byte(`{"type":"response.output_text.delta","delta":"tok","t":` + strconv.FormatInt(time.Since(u.epoch).Nanoseconds(), 10) + `}`))
			if i%10 == 9 {
				time.Sleep(200 * time.Microsecond)
			}
		}
	case "bench-slow":
		for i := 0; i < 20; i++ {
			event([]byte(`{"type":"response.output_text.delta","delta":"slow token"}`))
			time.Sleep(50 * time.Millisecond)
		}
	default:
		event([]byte(`{"type":"response.output_text.delta","delta":"ok"}`))
	}
	w.Write([]byte("event: response.completed\ndata: "))
	w.Write(benchDone)
	w.Write([]byte("\n\n"))
}

func (u *benchUpstream) close() { u.srv.Close() }
