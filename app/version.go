package app

import (
	"io"
	"log/slog"
)

// Version is set at build time (-ldflags "-X github.com/codexrelay/codexrelay/app.Version=...").
var Version = "dev"

// Logger is the structured logger of the app: text on stderr, level from CODEXRELAY_LOG_LEVEL.
func Logger(w io.Writer, getenv func(string) string) *slog.Logger {
	lvl := slog.LevelInfo
	if v := getenv("CODEXRELAY_LOG_LEVEL"); v != "" {
		lvl.UnmarshalText([]byte(v))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl}))
}
