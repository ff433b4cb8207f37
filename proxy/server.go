package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/codexrelay/codexrelay/proxy/pool"
)

// Options configure a Server. The zero value is usable: no local key, loopback only.
type Options struct {
	// LocalAPIKey, when set, must be presented by clients as a bearer token or x-api-key.
	LocalAPIKey string
	// AllowRemote lets requests with a non-loopback Host through (serve --allow-remote);
	// it is only honoured together with LocalAPIKey.
	AllowRemote bool
	// MaxBodyBytes limits request bodies after decompression (default 64 MiB).
	MaxBodyBytes int64
	// Timeouts bound the waits for an upstream (zero fields take the defaults); SetTimeouts
	// changes them at runtime.
	Timeouts Timeouts
	// BodyIdleTimeout cuts a request body that stalls: no byte for this long (default 30 s)
	// answers 408. BodyTimeout bounds the whole body however it trickles (default 2 min).
	BodyIdleTimeout, BodyTimeout time.Duration
	// RetryBackoff is the pause before retrying a transient failure on the same account (default 250 ms).
	RetryBackoff time.Duration
	// Breaker sets when a failing account rests (zero fields take the defaults).
	Breaker Breaker
	// IdleReclaim is how long the relay must be idle (no request in flight) after serving
	// before it hands freed memory back to the system (default 10 s; negative: never).
	IdleReclaim time.Duration
	// Strategy is StrategyPriority (default), StrategyRoundRobin or StrategyMostQuotaLeft.
	Strategy string
	// Transport sends upstream requests (default: a tuned http.Transport).
	Transport http.RoundTripper
	// Logger receives structured logs; never secrets (default: discard).
	Logger *slog.Logger
	// Now is the clock (tests control it).
	Now func() time.Time
	// Catalog configures the model catalog.
	Catalog CatalogOptions
	// TraceBufferSize is how many recent traces /relay/traces keeps (default 500).
	TraceBufferSize int
	// MemoryLimit is what the relay's byte budgets hold at most, all together (default
	// DefaultMemoryLimit, 448 MiB): each budget's default bound is its share of it (budgets.go's
	// table). ConversationBudget, SocketReadBudget, CompactionBudget and MemoryBudget, when set,
	// are their budgets' bounds instead of their shares.
	MemoryLimit int64
	// ConversationBudget bounds the conversations the WebSocket connections keep, and those of
	// the responses the relay served over HTTP (served.go), all together (default 64 MiB);
	// past it the least recently used is forgotten.
	ConversationBudget int64
	// MaxSockets bounds the client WebSockets open at once (default 256); SocketReadBudget the
	// bytes of client frames being read or waiting to be answered, all sockets together
	// and what large turns being served copy of them (default 128 MiB; one turn is always
	// served); SocketIdle the silence allowed between a socket's turns (default 15
	// minutes; the first frame must come within a minute).
	MaxSockets       int
	SocketReadBudget int64
	SocketIdle       time.Duration
	// SealedItems bounds how many account-sealed items (reasoning, compaction) the relay
	// remembers the sealing account of (default 262144, about 40 bytes each).
	SealedItems int
	// CompactionBudget bounds the requests that produced compactions, kept (compressed) to
	// re-make a compaction on another account after a rotation (default 32 MiB, all
	// conversations together; compaction.go).
	CompactionBudget int64
	// CompactionDir, when set, is where those requests are kept, as files (mode 0600), so that
	// a conversation's compaction survives a restart of the relay: a relay that starts serving
	// reads back what an earlier one kept there ("": memory only).
	CompactionDir string
	// SealKey (32 bytes) seals the compactions the relay makes itself for Chat Completions
	// accounts (relaycompact.go). Without one, the key kept in CompactionDir (seal.key, mode
	// 0600, beside the conversations it seals summaries of), so that a conversation compacted
	// so keeps its memory across restarts; without either, a key of the process's own.
	SealKey []byte
	// MemoryBudget bounds the bytes the requests in flight hold whole at once, all together:
	// their bodies, and the answers read before they are relayed (default 224 MiB; memory.go).
	MemoryBudget int64
	// Hold is the longest a request waits, with nothing sent, when every account rests and
	// the earliest is back within it (0: the default 30 s; negative: never wait); SetHold
	// changes it at runtime.
	Hold time.Duration
	// ResetCredits is the reset-credit policy: ResetCreditsAsk (default), ResetCreditsOff or
	// ResetCreditsAuto (credits.go); SetResetCredits changes it at runtime.
	ResetCredits string
	// LocalAPI builds, for the server, the handler of /relay/*: the embedder's local API
	// (app/localapi), reached after the loopback guards, the local key and the instance
	// signature (nil: /relay/* answers 404 unknown_route).
	LocalAPI func(*Server) http.Handler
	// ChatGPTBackend is where the ChatGPT backend calls of a Codex whose chatgpt_base_url is the
	// relay go when the relay does not answer them itself (chatgptapi.go), with Codex's own
	// sign-in (default https://chatgpt.com/backend-api).
	ChatGPTBackend string
}

// Server is the routing proxy. It is an http.Handler; Serve runs it on a listener with a
// graceful drain.
type Server struct {
	opt         Options
	log         *slog.Logger
	client      *http.Client
	pool        *pool.Pool
	traces      *traceRing
	c           counters
	catalog     *catalog
	aliases     atomic.Pointer[map[string][]string]
	started     time.Time
	keyHash     atomic.Pointer[localKeyValue]
	instance    instanceAuth // the instance secret signed requests prove (instanceauth.go)
	listen      atomic.Value // string
	mux         *http.ServeMux
	seq         atomic.Uint64
	allowRemote atomic.Bool
	timeouts    atomic.Pointer[Timeouts]
	// serving counts the Serve calls running (the quota loop reads quotas while one does).
	serving atomic.Int32
	// lastServed is the key of the account that served the last request that got an answer.
	lastServed atomic.Pointer[string]
	// generation is the settings generation the embedder last applied (SetSettingsGeneration).
	generation atomic.Uint64
	// changes is raised whenever something Stats, Traces or Health report changed (Changes).
	changes Signal
	// reclaimer is the timer that returns memory after a busy spell (startReclaimer).
	reclaimer struct {
		mu      sync.Mutex
		timer   *time.Timer // nil while not serving
		serves  int         // the Serve calls running
		armedAt int64       // the request total when it was armed
		count   int         // collections run (tests)
	}
	// sockets holds the open client WebSockets (*socketConn), to drain them when the relay
	// stops; convs bounds their conversations; socketHTTP dials upstream sockets.
	sockets    sync.Map
	convOnce   sync.Once
	convs      *convBudget
	socketOnce sync.Once
	socketHTTP *http.Client
	// traceHook sees every finished request's trace.
	traceHook atomic.Pointer[func(Trace)]
	tokens    tokenCounters
	// rows are the route table's rows by the mux patterns they registered, and served what
	// the unknown_route answer names (routes.go).
	rows   map[string]*routeRow
	served string
	// seals remembers which account sealed each sealed item relayed (sealtable.go).
	seals *sealTable
	// compactions keeps the requests that produced compactions (compaction.go).
	compactions *compactionStore
	// replays are the replayed conversations requests use now (served.go).
	replays replays
	// sealer seals the relay's own compactions (relaycompact.go); Serve may replace it with the
	// key kept on disk while handlers of an earlier Serve still run.
	sealer atomic.Pointer[sealCipher]
	// relaySeals says that compactions the relay sealed may come back in requests: it made one,
	// or its key is one an earlier relay kept. Until then no request is looked through for them.
	relaySeals atomic.Bool
	sealKeyMu  sync.Mutex // making the kept key (sealSummary)
	// remaking joins the requests that need one compaction re-made on one account (compaction.go).
	remaking singleflight.Group
	// budgets are the bounds of the relay's byte budgets (budgets.go); mem the budget of what
	// requests hold at once (memory.go).
	budgets budgets
	mem     *memBudget
	sealOff atomic.Bool // SetSealedTracking(false)
	// turnStates remembers which account issued each x-codex-turn-state (turn.go).
	turnStates *sealTable
	// hold is the longest wait for a resting pool (ns); holding counts requests waiting.
	hold    atomic.Int64
	holding atomic.Int64
	// frameBytes is what client WebSocket frames being read or waiting hold, turnBytes what the
	// turns being served reserve for their copies (socket.go).
	frameBytes, turnBytes atomic.Int64
	// paused: requests to accounts get 503 relay_paused (SetPaused).
	paused atomic.Bool
	// credits is the reset-credit policy and its redemptions (credits.go).
	credits creditPolicy
}

// SetTraceHook has f called with the trace of every finished request (nil: none), on the
// request's goroutine as it ends: f must not block (the usage ledger queues and returns).
func (s *Server) SetTraceHook(f func(Trace)) {
	if f == nil {
		s.traceHook.Store(nil)
		return
	}
	s.traceHook.Store(&f)
}

// New returns a Server with no accounts.
func New(opt Options) *Server {
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = DefaultMaxBody
	}
	if opt.BodyIdleTimeout <= 0 {
		opt.BodyIdleTimeout = 30 * time.Second
	}
	if opt.BodyTimeout <= 0 {
		opt.BodyTimeout = 2 * time.Minute
	}
	if opt.IdleReclaim == 0 {
		opt.IdleReclaim = 10 * time.Second
	}
	opt.Breaker = opt.Breaker.WithDefaults()
	if opt.RetryBackoff <= 0 {
		opt.RetryBackoff = 250 * time.Millisecond
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.ChatGPTBackend == "" {
		opt.ChatGPTBackend = defaultChatGPTBackend
	}
	if opt.MaxSockets <= 0 {
		opt.MaxSockets = 256
	}
	budgets := newBudgets(opt)
	opt.SocketReadBudget = budgets.of(budgetSocketReads)
	if opt.SocketIdle <= 0 {
		opt.SocketIdle = defaultSocketIdle
	}
	if opt.TraceBufferSize <= 0 {
		opt.TraceBufferSize = 500
	}
	if opt.Transport == nil {
		opt.Transport = newTransport()
	}
	s := &Server{
		opt:         opt,
		log:         opt.Logger,
		client:      &http.Client{Transport: opt.Transport, CheckRedirect: noRedirects},
		traces:      newTraceRing(opt.TraceBufferSize),
		seals:       newSealTable(opt.SealedItems),
		budgets:     budgets,
		compactions: newCompactionStore(budgets.of(budgetCompactions)),
		mem:         newMemBudget(budgets.of(budgetRequests)),
		// Turn states live for a turn; a few thousand cover every conversation in flight.
		turnStates: newSealTable(4096),
	}
	s.pool = pool.New(s.changes.Raise, s.now, opt.Breaker)
	s.SetHold(opt.Hold)
	if err := s.SetResetCredits(opt.ResetCredits); err != nil {
		s.log.Error("options: banked resets ignored", "error", err)
	}
	s.started = s.now()
	s.SetTimeouts(opt.Timeouts)
	s.pool.SetStrategy(opt.Strategy)
	s.SetLocalAPIKey(opt.LocalAPIKey)
	s.sealer.Store(&sealCipher{aead: newSealAEAD(opt.SealKey), kept: opt.SealKey != nil})
	s.relaySeals.Store(opt.SealKey != nil) // the embedder's key may have sealed compactions before
	s.catalog = newCatalog(s, opt.Catalog)
	s.routes()
	return s
}

func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 16
	t.IdleConnTimeout = 90 * time.Second
	// Bodies go through as they are: a compressed stream would hold events back in the
	// decompressor, and the relay must flush each event at once.
	t.DisableCompression = true
	t.ForceAttemptHTTP2 = true
	// Small buffers: a relay holds one upstream connection per stream in flight. Large bodies
	// bypass the write buffer after the headers, and the event reader has its own.
	t.WriteBufferSize = 2 << 10
	t.ReadBufferSize = 2 << 10
	return t
}

// startReclaimer hands freed memory back to the system once the relay has been idle (no
// request in flight, none started) for IdleReclaim after serving: a burst of streams grows the
// heap, and the runtime would otherwise return it only slowly. Nothing ticks: the request that
// leaves the relay idle arms a timer (idle), and the timer collects once if no request started
// meanwhile, so an idle relay sleeps.
func (s *Server) startReclaimer() (stop func()) {
	if s.opt.IdleReclaim < 0 {
		return func() {}
	}
	r := &s.reclaimer
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.serves++; r.timer == nil {
		r.timer = time.AfterFunc(time.Hour, func() {
			r.mu.Lock()
			quiet := r.timer != nil && s.c.total.Load() == r.armedAt && s.c.inFlight.Load() == 0
			if quiet {
				r.count++
			}
			r.mu.Unlock()
			if quiet {
				s.reclaim()
			}
		})
		r.timer.Stop()
	}
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.serves--; r.serves == 0 {
			r.timer.Stop()
			r.timer = nil
		}
	}
}

// idle is called by the request that leaves none in flight: it arms the reclaimer.
func (s *Server) idle() {
	r := &s.reclaimer
	r.mu.Lock()
	if r.timer != nil {
		r.armedAt = s.c.total.Load()
		r.timer.Reset(s.opt.IdleReclaim)
	}
	r.mu.Unlock()
}

// reclaim hands the memory a burst of requests left behind back to the system: what must stay
// (the kept traces) is copied together first, pooled buffers are dropped (a sync.Pool empties
// over two collections), and the freed pages are returned.
func (s *Server) reclaim() {
	s.traces.compact()
	runtime.GC()
	debug.FreeOSMemory()
}

// CloseIdleConnections closes the upstream connections kept for reuse; requests open new ones
// as they need them.
func (s *Server) CloseIdleConnections() {
	if t, ok := s.opt.Transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
}

// waitSockets waits until the client sockets have closed, or ctx ends.
func (s *Server) waitSockets(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for s.c.sockets.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func (s *Server) now() time.Time { return s.opt.Now() }

// SetAccounts replaces the upstream accounts, in priority order. Runtime state (cooldowns,
// counters) is kept for accounts that keep their name, kind and base URL.
func (s *Server) SetAccounts(accounts []Account) {
	added := s.pool.Set(accounts)
	s.catalog.invalidate()
	// A ChatGPT account added while the relay serves shows its quota at once, not at the next
	// round of the quota loop.
	for _, m := range added {
		s.refreshQuotaSoon(m)
	}
}

// ResetAccount forgets the cooldown, model blocks and needs-login mark of the account with
// this ID (or, for accounts without one, name), after the user signed in again.
func (s *Server) ResetAccount(key string) {
	for _, m := range s.pool.List() {
		if m.Key() == key {
			s.pool.SignedIn(m)
			s.refreshQuotaSoon(m)
		}
	}
}

// SetStrategy switches the routing strategy at runtime.
func (s *Server) SetStrategy(strategy string) {
	s.pool.SetStrategy(strategy)
}

// SetLocalAPIKey sets (or with "" removes) the key clients must present.
func (s *Server) SetLocalAPIKey(key string) {
	if key == "" {
		s.keyHash.Store(nil)
		return
	}
	s.keyHash.Store(&localKeyValue{hash: sha256.Sum256([]byte(key)), key: key})
}

// localKeyValue is the local key: its digest, which a presented key is compared with in
// constant time, and the key itself, which is looked for in what goes on to chatgpt.com
// (scrubLocalKey).
type localKeyValue struct {
	hash [32]byte
	key  string
}

// LocalKeyRequired says whether clients must present the local key (SetLocalAPIKey).
func (s *Server) LocalKeyRequired() bool { return s.keyHash.Load() != nil }

// SetAllowRemote lets requests addressed to a non-loopback host through (serve
// --allow-remote). It is only honoured while a local API key is set.
func (s *Server) SetAllowRemote(on bool) { s.allowRemote.Store(on) }

// SetSettingsGeneration records which generation of its settings the embedder has applied
// in full; /health and /relay/stats report it, so that a program that changed the settings can
// tell when the running relay follows them.
func (s *Server) SetSettingsGeneration(n uint64) {
	s.generation.Store(n)
	s.changes.Raise()
}

// SetListenAddr records the address the proxy listens on, for stats.
func (s *Server) SetListenAddr(addr string) {
	s.listen.Store(addr)
	s.changes.Raise()
}

// Changes returns the generation of what Stats and Traces report and a channel that closes
// when it next changes: a request starts or ends, an account rests, needs a sign-in or is
// read again, the catalog is refreshed, the settings or the listener change. Those who show
// the relay (the tray, the window process through the window API) wait on it instead of
// polling; see Signal for how. What changes with the clock alone (a rest that ends, the
// catalog's age) raises nothing: a waiter that shows it sets its own timer.
func (s *Server) Changes() (uint64, <-chan struct{}) { return s.changes.Changes() }

// Touch says that something the embedder shows beside the relay's state changed (its
// listener's status, say), so that those waiting on Changes read again.
func (s *Server) Touch() { s.changes.Raise() }

// Stats returns a snapshot of the live state.
func (s *Server) Stats() Snapshot {
	snap := s.snapshot()
	snap.Listen, _ = s.listen.Load().(string)
	snap.SettingsGeneration = s.generation.Load()
	if k := s.lastServed.Load(); k != nil {
		if m := s.pool.Get(*k); m != nil {
			snap.LastServed = m.Name
		}
	}
	if m := s.pool.Next(s.now()); m != nil {
		snap.Next = m.Name
	}
	return snap
}

// Traces returns up to limit recent traces, newest first.
func (s *Server) Traces(limit int) []Trace { return s.traces.recent(limit) }

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	snap := s.snapshot()
	ready := 0
	for _, a := range snap.Accounts {
		if a.State == StateReady {
			ready++
		}
	}
	listen, _ := s.listen.Load().(string)
	writeJSON(w, http.StatusOK, map[string]any{
		"status": "ok", "accounts": len(snap.Accounts), "ready_accounts": ready, "uptime_ms": snap.UptimeMs,
		"listen": listen, "settings_generation": s.generation.Load(), "paused": s.paused.Load(),
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, &apiError{Status: 500, Type: "server_error", Message: "could not encode the answer"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// Serve answers on ln until ctx is cancelled, then stops accepting, lets in-flight requests
// finish for up to drain, and cuts what is still running.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	hardCtx, hardStop := context.WithCancel(context.Background())
	defer hardStop()
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return hardCtx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	hs.RegisterOnShutdown(s.drainSockets)
	s.SetListenAddr(ln.Addr().String())
	stopRefresh := s.catalog.startSchedule()
	defer stopRefresh()
	if err := s.compactions.open(s.opt.CompactionDir, s.seals.learnSealer); err != nil {
		s.log.Warn("the compactions kept on disk cannot be read: conversations compacted before are kept in memory from now on", "error", err)
	} else if s.opt.CompactionDir != "" && s.opt.SealKey == nil {
		// A key kept by an earlier relay means it sealed compactions clients may send again;
		// without one, the key is made with the first compaction this relay seals (sealSummary).
		if key, err := readSealKey(filepath.Join(s.opt.CompactionDir, sealKeyName)); err == nil {
			s.sealer.Store(&sealCipher{aead: newSealAEAD(key), kept: true})
			s.relaySeals.Store(true)
		}
	}
	s.serving.Add(1)
	defer s.serving.Add(-1)
	stopQuota := s.startQuotaLoop()
	defer stopQuota()
	stopReclaim := s.startReclaimer()
	defer stopReclaim()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("stopping: draining in-flight requests", "in_flight", s.c.inFlight.Load(), "drain", drain)
	// Those waiting on Changes (a window's long poll of /relay/changes, 25 s) answer now:
	// Shutdown waits for every request under way, and Quit with a window open took 1-2 s.
	s.changes.Raise()
	dctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := hs.Shutdown(dctx)
	if err == nil {
		// Shutdown does not wait for hijacked connections: the sockets finish their turn.
		err = s.waitSockets(dctx)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		s.log.Warn("drain time over: cutting remaining requests", "in_flight", s.c.inFlight.Load())
		hardStop()
		hs.Close()
		err = nil
	}
	<-errc
	return err
}
