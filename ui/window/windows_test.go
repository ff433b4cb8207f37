package window

import (
	os "os"
	"path/filepath"
	strings "strings"
	testing "testing"

	"github.com/codexrelay/codexrelay/app"
)

// The window process's copy: the dashboard, the block on its clipboard, and a word saying so.
func TestWindowCopiesCodexConfig(t *testing.T) {
	u, _ := newTestUI(t, map[string]string{"CODEXRELAY_LISTEN": "127.0.0.1:7999"})
	u.OpenWindow("copy-codex-config")
	if got := u.fa.Clipboard().Content(); !strings.Contains(got, `base_url = "http://127.0.0.1:7999/v1"`) {
		t.Errorf("clipboard:\n%s", got)
	}
	if got := overlayTexts(t, u.dashWin); !strings.Contains(got, "on the clipboard while this window is open") {
		t.Errorf("the dashboard says %q", got)
	}
}

// The tray's Configure Codex… says to add an account first while there is none, and changes
// nothing; then it asks, saying what it writes and how to undo it, and writes.
func TestWindowConfigureCodexAsksFirst(t *testing.T) {
	home := t.TempDir()
	u, relay := newTestUI(t, map[string]string{"CODEX_HOME": home})
	old := "model = \"gpt-5.1-codex\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	u.OpenWindow("configure-codex")
	w := u.dashWin
	if w == nil {
		t.Fatal("no window for the confirmation")
	}
	if got := overlayTexts(t, w); !strings.Contains(got, "no account yet") {
		t.Fatalf("with no account the dialog says %q", got)
	}
	w.Canvas().Overlays().Top().Hide()
	w.Canvas().Overlays().Remove(w.Canvas().Overlays().Top())
	if b, _ := os.ReadFile(filepath.Join(home, "config.toml")); string(b) != old {
		t.Fatalf("config.toml changed with no account:\n%s", b)
	}
	if _, err := relay.AddAccount(app.NewAccount{Name: "key", Kind: "openai", BaseURL: "http://127.0.0.1:9/v1"}, app.Secret{APIKey: "sk-test-0000"}); err != nil {
		t.Fatal(err)
	}
	u.OpenWindow("configure-codex")
	if got := overlayTexts(t, w); !strings.Contains(got, filepath.Join(home, "config.toml")) || !strings.Contains(got, "codexrelay codex-config --remove") {
		t.Fatalf("confirmation says %q", got)
	}
	tapButton(t, w.Canvas().Overlays().Top(), "Configure")
	got := overlayTexts(t, w)
	if !strings.Contains(got, "Codex now sends") || !strings.Contains(got, filepath.Join(home, "config.toml.bak-")) {
		t.Errorf("after Configure the dialog says %q", got)
	}
	b, err := os.ReadFile(filepath.Join(home, "config.toml"))
	if err != nil || !strings.Contains(string(b), `model_provider = "codexrelay"`) {
		t.Errorf("config.toml now:\n%s (%v)", b, err)
	}
}
