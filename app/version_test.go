package app

import (
	"runtime/debug"
	"testing"
)

func TestBuildComesFromTheBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/codexrelay/codexrelay", Version: "v0.3.1-0.20261201150000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-12-01T15:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	b := buildOf(bi)
	if b.Version != bi.Main.Version || b.Revision != "0123456789abcdef0123" || !b.Modified || b.Time != "2026-12-01T15:00:00Z" {
		t.Fatalf("%+v", b)
	}
	if got, want := b.String(), "v0.3.1-0.20261201150000-0123456789ab+dirty (revision 0123456789ab of 2026-12-01T15:00:00Z, modified; go1.26.8)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	bi.Settings[2].Value = "false"
	if b := buildOf(bi); b.Modified || b.String() != "v0.3.1-0.20261201150000-0123456789ab+dirty (revision 0123456789ab of 2026-12-01T15:00:00Z; go1.26.8)" {
		t.Errorf("clean: %q", b)
	}
	if got := buildOf(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}).String(); got != "(devel) (no VCS revision recorded; go1.26.8)" {
		t.Errorf("no VCS: %q", got)
	}
	old := Version
	Version = "1.2.0"
	defer func() { Version = old }()
	if b := buildOf(bi); b.Version != "1.2.0" {
		t.Errorf("the release's version is %q", b.Version)
	}
}
