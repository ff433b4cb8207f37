package app

import (
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
)

// The running relay (package app/relay) as app's tests drive it. app/relay is above app (it
// follows the store), so app's own tests cannot import it; relaylink_test.go, an external test
// of this package (which may), sets NewRelayLink before any test runs, as clilink_test.go sets
// RunCLI. Relay and Service below are the real ones, reached through what the tests ask of
// them, so that app's tests drive the store and the relay that follows it together, as the
// tray process runs them.

// NewRelayLink builds the real relay over a store (relay.New).
var NewRelayLink func(*App) RelayLink

// RelayLink is the real relay, as app's tests ask it.
type RelayLink interface {
	Proxy() *proxy.Server
	NewService(listen string, allowRemote bool, onChange func(ServiceStatus)) ServiceLink
	Ledger() *ledger.Ledger
	LedgerError() error
	OnCreditEvent(func(proxy.CreditEvent))
	RedeemCredit(name string) (proxy.RedeemResult, error)
	LocalKeyError() error
}

// ServiceLink is the real relay service.
type ServiceLink interface {
	ListenerControl
	Start(inst *Instance) error
	Stop()
}

// Relay is a relay over a store, as app's tests hold it: the store's methods, the proxy, and
// what only the relay does.
type Relay struct {
	*App
	Proxy *proxy.Server
	link  RelayLink
}

// OpenRelay opens a store and builds the relay over it (relay.Open).
func OpenRelay(opt Options) (*Relay, error) {
	a, err := Open(opt)
	if err != nil {
		return nil, err
	}
	return a.NewRelay(), nil
}

// NewRelay builds a relay over the store (relay.New).
func (a *App) NewRelay() *Relay {
	l := NewRelayLink(a)
	return &Relay{App: a, Proxy: l.Proxy(), link: l}
}

func (r *Relay) NewService() *Service { return r.NewServeService("", false) }

func (r *Relay) NewServeService(listen string, allowRemote bool) *Service {
	s := &Service{r: r}
	s.link = r.link.NewService(listen, allowRemote, func(st ServiceStatus) {
		if f := s.OnChange; f != nil {
			f(st)
		}
	})
	return s
}

func (r *Relay) Ledger() *ledger.Ledger                  { return r.link.Ledger() }
func (r *Relay) LedgerError() error                      { return r.link.LedgerError() }
func (r *Relay) OnCreditEvent(f func(proxy.CreditEvent)) { r.link.OnCreditEvent(f) }
func (r *Relay) LocalKeyError() error                    { return r.link.LocalKeyError() }
func (r *Relay) RedeemCredit(name string) (proxy.RedeemResult, error) {
	return r.link.RedeemCredit(name)
}

// Service is a relay service, as app's tests hold it: Instance and OnChange are set before
// Start, as on the real one.
type Service struct {
	Instance *Instance
	OnChange func(ServiceStatus)
	r        *Relay
	link     ServiceLink
}

func (s *Service) Start() error                { return s.link.Start(s.Instance) }
func (s *Service) Stop()                       { s.link.Stop() }
func (s *Service) Status() ServiceStatus       { return s.link.Status() }
func (s *Service) Pause()                      { s.link.Pause() }
func (s *Service) Resume() error               { return s.link.Resume() }
func (s *Service) SetListen(addr string) error { return s.link.SetListen(addr) }
