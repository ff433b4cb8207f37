package app_test

import (
	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/relay"
	"github.com/codexrelay/codexrelay/proxy"
)

// relayLink hands app's tests the real relay (see relayhook_test.go).
func init() {
	app.NewRelayLink = func(a *app.App) app.RelayLink { return relayLink{relay.New(a)} }
}

type relayLink struct{ *relay.Relay }

func (l relayLink) Proxy() *proxy.Server { return l.Relay.Proxy }

func (l relayLink) NewService(listen string, allowRemote bool, onChange func(app.ServiceStatus)) app.ServiceLink {
	s := l.NewServeService(listen, allowRemote)
	s.OnChange = onChange
	return serviceLink{s}
}

type serviceLink struct{ *relay.Service }

func (s serviceLink) Start(inst *app.Instance) error {
	s.Instance = inst
	return s.Service.Start()
}
