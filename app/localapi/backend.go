package localapi

import (
	"context"
	"net/http"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
)

// Backend is what the routes answer from, on one port. Each part serves its routes (the table
// names the part of each); a part left nil answers its routes 404 not_served, so that one
// table serves every port with what that port has.
type Backend struct {
	// Relay is the running relay's live state: stats and traces.
	Relay Relay
	// Credits redeems banked resets (the relay's *proxy.Server).
	Credits Credits
	// Pause pauses and resumes the relay's serving.
	Pause Pauser
	// Listener is the tray's listener: its status and its address.
	Listener Listener
	// Usage returns the usage ledger to read now (it opens and closes with the relay).
	Usage func() Usage
	// Proof says what a request proved beyond the port's own guard (nil: nothing); WithToken
	// marks what it lets through as ProofFolder.
	Proof func(*http.Request) Proof
}

// Relay is the relay's live state (*proxy.Server).
type Relay interface {
	Stats() proxy.Snapshot
	// Traces returns up to limit recent requests, newest first.
	Traces(limit int) []proxy.Trace
	// Changes is the generation of what Stats and Traces answer and a channel that closes
	// when it next changes (proxy.Signal).
	Changes() (uint64, <-chan struct{})
}

// Credits spends banked resets (*proxy.Server).
type Credits interface {
	RedeemCredit(ctx context.Context, account string) (proxy.RedeemResult, error)
}

// Pauser pauses (true) or resumes the relay's serving, and returns the state after; the error
// is a resume's that could not open the port.
type Pauser interface {
	SetPaused(pause bool) (PauseState, error)
}

// Listener is the listener as the tray process runs it.
type Listener interface {
	Status() Status
	// SetListen validates and saves a new listen address and moves the listener there.
	SetListen(addr string) error
}

// Control is a listener that also pauses: what the tray's service is on its window port.
type Control interface {
	Pauser
	Listener
}

// Usage is the usage ledger as the routes read it. Without a ledger to read, each method
// returns ErrUsageOff, ErrUsageClosed or why it failed to open.
type Usage interface {
	Summary(ctx context.Context, q ledger.Query) (ledger.Report, error)
	Daily(ctx context.Context, since time.Time) ([]ledger.DayByAccount, error)
	Burn(ctx context.Context, account string) (ledger.Burn, error)
	Forecast(ctx context.Context, accounts []string, now time.Time) (ledger.Forecast, error)
}

// Proof is what a request proved about its caller, beyond getting past the port's guard.
type Proof int

const (
	// ProofNone: nothing more (on the relay port with the local key off, any local program).
	ProofNone Proof = iota
	// ProofKey: it carries the relay's local key (the relay port, with the key on).
	ProofKey
	// ProofFolder: a program of this settings folder: signed with the instance secret
	// (proxy/instanceauth.go), or holding the window token the tray hands its windows.
	ProofFolder
)

// ServerBackend is the relay port's backend of a bare proxy.Server: its stats, traces and
// reset credits, its pause (SetPaused: no embedder keeps a state of it) and what its guards
// proved (RelayProof). An embedder replaces the parts it runs itself (app: the pause, through
// its service; the usage ledger).
func ServerBackend(s *proxy.Server) Backend {
	return Backend{Relay: s, Credits: s, Pause: serverPause{s}, Proof: RelayProof(s)}
}

// RelayProof is what a request to s proved: a valid instance signature is the folder's
// program; past s's guard with the local key on, it carries the key.
func RelayProof(s *proxy.Server) func(*http.Request) Proof {
	return func(r *http.Request) Proof {
		switch {
		case proxy.InstanceSigned(r):
			return ProofFolder
		case s.LocalKeyRequired():
			return ProofKey
		}
		return ProofNone
	}
}

// serverPause pauses a bare proxy.Server.
type serverPause struct{ s *proxy.Server }

func (p serverPause) SetPaused(pause bool) (PauseState, error) {
	was := p.s.Paused()
	p.s.SetPaused(pause)
	return PauseState{Paused: p.s.Paused(), Changed: was != p.s.Paused()}, nil
}

// has says whether b has the part the route needs.
func (b *Backend) has(p part) bool {
	switch p {
	case partRelay:
		return b.Relay != nil
	case partCredits:
		return b.Credits != nil
	case partPause:
		return b.Pause != nil
	case partListener:
		return b.Listener != nil
	case partUsage:
		return b.Usage != nil
	}
	return false
}

// proofKey marks a request's context with what WithToken proved.
type proofKey struct{}

// proof is what r proved: what WithToken marked, or what the backend's guard says.
func (b *Backend) proof(r *http.Request) Proof {
	p, _ := r.Context().Value(proofKey{}).(Proof)
	if b.Proof != nil {
		p = max(p, b.Proof(r))
	}
	return p
}
