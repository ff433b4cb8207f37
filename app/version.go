package app

import (
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
)

// Version names a release when a packaging build sets it (-ldflags "-X
// github.com/codexrelay/codexrelay/app.Version=1.2.0"); without it the module version the Go
// command recorded is used.
var Version = ""

// A Build says what was built: the version, the VCS revision and its time, and whether the
// working tree had changes that no commit holds. A plain `go build` in a clone records all of
// them (the Go command stamps the VCS state into the binary).
type Build struct {
	Version   string `json:"version"`            // Version, or the module's ("(devel)" for a plain build of an untagged tree)
	Revision  string `json:"revision,omitempty"` // the commit
	Time      string `json:"time,omitempty"`     // the commit's time, RFC 3339
	Modified  bool   `json:"modified"`           // the tree had uncommitted changes
	GoVersion string `json:"go"`
}

// ReadBuild reads this binary's build.
func ReadBuild() Build {
	bi, _ := debug.ReadBuildInfo()
	return buildOf(bi)
}

func buildOf(bi *debug.BuildInfo) Build {
	b := Build{Version: Version}
	if bi == nil {
		return b
	}
	if b.Version == "" {
		b.Version = bi.Main.Version
	}
	b.GoVersion = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the build on one line: "v1.2.0 (revision 0123456789ab of 2026-12-01T15:00:00Z,
// modified; go1.26.8)".
func (b Build) String() string {
	v := b.Version
	if v == "" {
		v = "(unknown version)"
	}
	var parts []string
	if b.Revision != "" {
		rev := "revision " + b.Revision[:min(len(b.Revision), 12)]
		if b.Time != "" {
			rev += " of " + b.Time
		}
		if b.Modified {
			rev += ", modified"
		}
		parts = append(parts, rev)
	} else {
		parts = append(parts, "no VCS revision recorded")
	}
	if b.GoVersion != "" {
		parts = append(parts, b.GoVersion)
	}
	return fmt.Sprintf("%s (%s)", v, strings.Join(parts, "; "))
}

// Logger is the structured logger of the app: text on stderr, level from CODEXRELAY_LOG_LEVEL.
func Logger(w io.Writer, getenv func(string) string) *slog.Logger {
	lvl := slog.LevelInfo
	if v := getenv("CODEXRELAY_LOG_LEVEL"); v != "" {
		lvl.UnmarshalText([]byte(v))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl}))
}
