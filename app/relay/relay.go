package app

import (
	"net/http"

	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
)

// Relay is a running relay over a settings folder's store: the proxy, built from the store's
// settings and following each settings file the store applies (follow), with what serving
// takes (the listener's Service, the usage ledger it records into, the banked resets' events,
// the local API on its port). The programs that serve make one: the tray process and `serve`;
// a command that reaches an upstream without a running relay (reading quotas for `accounts
// list`, redeeming a banked reset) makes one that never listens. Everything else, the window
// process included, opens the store alone (Open).
//
// The store's methods are the Relay's too (it embeds *App): a setting changed through it is
// written to the file, applied by the store, and followed here.
type Relay struct {
	*App
	Proxy *proxy.Server

	svc     *Service    // the relay service, the latest made (the pause routes'); under App.mu
	usage   usageState  // the usage ledger while a service runs (usage.go)
	credits creditState // banked resets: the proxy's credit hook and its listeners (credits.go)
}

// NewRelay builds the relay over the store: its proxy takes the store's settings and accounts
// and follows every settings file the store applies from then on. One per store: a second call
// returns the first relay.
func (a *App) NewRelay() *Relay {
	a.applyMu.Lock()
	defer a.applyMu.Unlock()
	if r := a.runningRelay(); r != nil {
		return r
	}
	cur := a.Settings()
	// The catalog is built with the proxy (its refresh starts with its options, and the
	// environment gives them first); everything else is applied as a reload applies it.
	catOpt, _ := catalogOptions(cur, a.opt.Getenv) // Open refused a file whose options fail
	r := &Relay{App: a}
	r.Proxy = proxy.New(proxy.Options{Transport: a.opt.Transport, Logger: a.log, Catalog: catOpt, LocalAPI: r.localAPI,
		ChatGPTBackend: proxy.ChatGPTBackendOf(a.BaseURL(AccountMeta{Kind: string(proxy.KindChatGPT)}))})
	accounts, _ := a.setAccounts(cur.Accounts)
	r.follow(Settings{Catalog: cur.Catalog}, cur, accounts, nil)
	if err := a.LocalKeyError(); err != nil {
		// Not a reason to stop: the repairs (local-key on|off, settings set local-api-key) and
		// every command that needs no key run; the relay refuses clients until it is fixed.
		a.log.Error("the local key cannot be read", "error", err)
	}
	r.loadPendingRedeems()
	a.mu.Lock()
	a.relay = r
	a.mu.Unlock()
	r.Proxy.SetSettingsGeneration(cur.Generation)
	return r
}

// OpenRelay opens a settings folder's store and builds the relay over it (Open, NewRelay).
func OpenRelay(opt Options) (*Relay, error) {
	a, err := Open(opt)
	if err != nil {
		return nil, err
	}
	return a.NewRelay(), nil
}

// The local API (app/localapi) as this process serves it on the relay's port: the proxy's
// stats, traces and reset credits, the pause through the relay service this process runs (so
// that the tray's icon and the instance file follow), and the usage ledger it keeps. The tray
// serves the same table on its window port, with its listener besides (ControlAPI).

// localAPI is the relay port's handler of /relay/* (proxy.Options.LocalAPI).
func (r *Relay) localAPI(s *proxy.Server) http.Handler {
	b := localapi.ServerBackend(s)
	b.Pause = appPause{r, b.Pause}
	b.Usage = r.Usage
	return localapi.Handler(b)
}

// appPause pauses through the relay's service, or the bare proxy while it has none.
type appPause struct {
	r    *Relay
	bare localapi.Pauser
}

func (p appPause) SetPaused(pause bool) (localapi.PauseState, error) {
	if s := p.r.service(); s != nil {
		return ControlAPI(s).SetPaused(pause)
	}
	return p.bare.SetPaused(pause)
}

// service is the relay service this relay runs (the latest made), or nil.
func (r *Relay) service() *Service {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.svc
}
