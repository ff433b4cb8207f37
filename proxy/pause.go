package proxy

// Pausing: SetPaused (handler.go) pauses the relay for its embedder, which keeps its own state
// of it (the tray's icon and menu, the instance file) and serves the pause routes of its local
// API (Options.LocalAPI): `codexrelay pause` and `codexrelay resume`.

// Paused says whether the relay is paused.
func (s *Server) Paused() bool { return s.paused.Load() }
