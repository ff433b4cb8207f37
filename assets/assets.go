// Package assets holds the embedded icons.
package assets

import _ "embed"

// Icon is the application icon (256x256 PNG).
//
//go:embed icon.png
var Icon []byte

// Tray icons (64x64 PNG), one for each state the tray shows; make-tray-icons.sh makes them
// from icon.png.
var (
	// TrayServing: the proxy listens and every enabled account is ready.
	//go:embed tray-serving.png
	TrayServing []byte
	// TrayDegraded: the proxy listens, but some accounts are cooling down or need a sign-in.
	//go:embed tray-degraded.png
	TrayDegraded []byte
	// TrayStopped: no usable account, or the listener failed (port taken).
	//go:embed tray-stopped.png
	TrayStopped []byte
	// TrayPaused: the user paused the proxy.
	//go:embed tray-paused.png
	TrayPaused []byte
)
