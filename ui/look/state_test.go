package look_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// The dashboard's header (and the tray's tooltip) says each thing once.
func TestDashboardHeaderSaysEachThingOnce(t *testing.T) {
	for _, c := range []struct {
		name       string
		svc        app.ServiceStatus
		word, line string
	}{
		{"paused", app.ServiceStatus{Addr: "127.0.0.1:7455", Paused: true}, "Paused", "requests are refused until you resume"},
		{"port taken", app.ServiceStatus{Addr: "127.0.0.1:7455", Err: errors.New("cannot listen on 127.0.0.1:7455: the port is taken")},
			"Stopped", "cannot listen on 127.0.0.1:7455: the port is taken"},
		{"not started", app.ServiceStatus{}, "Stopped", "the relay has not started"},
		{"no account", uitest.Running(), "Not serving", "Listening on http://127.0.0.1:7455/v1 · no account yet"},
	} {
		snap := uitest.Sample().Snapshot
		if c.name == "no account" {
			snap.Accounts = nil
		}
		_, word, line := look.Header(snap, c.svc)
		if word != c.word || line != c.line {
			t.Errorf("%s: %q · %q, want %q · %q", c.name, word, line, c.word, c.line)
		}
		if strings.Contains(strings.ToLower(line), strings.ToLower(word)) {
			t.Errorf("%s: the line %q repeats %q", c.name, line, word)
		}
	}
}
