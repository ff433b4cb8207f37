// Package relay is the running relay over a settings folder's store (package app): the proxy,
// built from the store's settings and following each settings file the store applies
// (follow.go), with what serving takes: the listener's Service (service.go), the usage ledger
// it records into (usage.go), the banked resets' events and kept intents (credits.go), and the
// local API on its port.
//
// The programs that serve make one: the tray process and `codexrelay serve`. A command that
// reaches an upstream without a running relay (reading quotas for `accounts list`, redeeming a
// banked reset) makes one that never listens. Everything else, the window process included,
// opens the store alone (app.Open). The store knows its relay only as a follower (app.Follow):
// it hands it each change and never asks whether one runs.
package relay

import (
	"net/http"
	"sync"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
)

// Relay is a running relay over a store. The store's methods are the Relay's too (it embeds
// *app.App): a setting changed through it is written to the file, applied by the store, and
// followed here.
type Relay struct {
	*app.App
	Proxy *proxy.Server

	stop  func()               // ends the following (Close)
	built *app.CatalogSettings // the catalog settings the proxy was built with, until the first follow

	mu          sync.Mutex
	svc         *Service // the relay service, the latest made (the pause routes')
	onListen    []func() // the services' moves when the listen setting changed (follow)
	localKeyErr error    // why the local key that is on cannot be read (applyLocalKey)

	usage   usageState  // the usage ledger while a service runs (usage.go)
	credits creditState // banked resets: the credit hook's listeners (credits.go)
}

// New builds a relay over the store: its proxy takes the store's settings and accounts and
// follows every settings file the store applies from then on (until Close).
func New(store *app.App) *Relay {
	// The catalog is built with the proxy (its refresh starts with its options, and the
	// environment gives them first); everything else is applied as a change applies it.
	built := store.Settings().Catalog
	r := &Relay{App: store, built: &built}
	r.Proxy = proxy.New(proxy.Options{Transport: store.Transport(), Logger: store.Log(), Catalog: store.CatalogOptions(built),
		LocalAPI: r.localAPI, ChatGPTBackend: proxy.ChatGPTBackendOf(store.BaseURL(app.AccountMeta{Kind: string(proxy.KindChatGPT)})),
		CompactionDir: store.CompactionDir()})
	r.Proxy.SetCreditHook(r.creditEvent)
	r.Proxy.SetRedeemIntentHook(r.writePendingRedeem)
	r.stop = store.Follow(r.follow)
	store.UserAgentFrom(r.Proxy.UserAgent) // the sign-in carries the proxy's identity
	if err := r.LocalKeyError(); err != nil {
		// Not a reason to stop: the repairs (local-key on|off, settings set local-api-key) and
		// every command that needs no key run; the relay refuses clients until it is fixed.
		store.Log().Error("the local key cannot be read", "error", err)
	}
	r.loadPendingRedeems()
	return r
}

// Open opens a settings folder's store and builds the relay over it (app.Open, New).
func Open(opt app.Options) (*Relay, error) {
	a, err := app.Open(opt)
	if err != nil {
		return nil, err
	}
	return New(a), nil
}

// Close ends the relay's following of its store: for a relay that never listened (a command's,
// a redemption's), which the process does not keep.
func (r *Relay) Close() { r.stop() }

// The local API (app/localapi) as this process serves it on the relay's port: the proxy's
// stats, traces and reset credits, the pause through the relay service this process runs (so
// that the tray's icon and the instance file follow), and the usage ledger it keeps. The tray
// serves the same table on its window port, with its listener besides (app.ControlAPI).

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
		return app.ControlAPI(s).SetPaused(pause)
	}
	return p.bare.SetPaused(pause)
}

// service is the relay service this relay runs (the latest made), or nil.
func (r *Relay) service() *Service {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.svc
}
