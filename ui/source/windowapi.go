package source

import "github.com/codexrelay/codexrelay/app"

// The window API is how the window process (B) reads the tray process's (A's) live state and
// asks it for what only A can do (pause, resume, move the listener): the local API's route
// table (app/localapi), which A serves on a loopback port of its own behind the token it hands
// to each window process it starts (ui/tray), and B reads with the local API's client
// (ui/window). The relay's port may be paused, taken or moved, and the window process must
// still say so.

// RelayControl is what the windows ask of the listener: the in-process *app.Service, or the
// tray process through the window API.
type RelayControl interface {
	Status() app.ServiceStatus
	Pause()
	Resume() error
	SetListen(addr string) error
}
