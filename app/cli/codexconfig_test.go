package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// codex-config --write says what it changed in both of Codex's files and how to undo it;
// --remove undoes it and says what it did; then it finds nothing to undo; --write and --remove
// together are a usage error.
func TestCodexConfigWriteThenRemove(t *testing.T) {
	opt := testOptions(t)
	opt.Keychain = testKeychain(t)
	codexHome := t.TempDir()
	opt.Getenv = func(k string) string { return map[string]string{"CODEX_HOME": codexHome}[k] }
	if code, _, errs := runCLI(t, opt, "", "local-key", "on"); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := runCLI(t, opt, "", "codex-config", "--write")
	if code != 0 {
		t.Fatal(errs)
	}
	envPath := filepath.Join(codexHome, ".env")
	for _, want := range []string{"Created " + filepath.Join(codexHome, "config.toml"), "Created " + envPath, "NO_PROXY", "`codexrelay codex-config --remove` undoes this."} {
		if !strings.Contains(out, want) {
			t.Errorf("--write does not say %q:\n%s", want, out)
		}
	}
	// A config.toml written before .env was (an older version's): only .env changes, and the
	// command does not say that nothing did.
	os.Remove(envPath)
	if code, out, _ := runCLI(t, opt, "", "codex-config", "--write"); code != 0 || strings.Contains(out, "nothing changed") ||
		!strings.Contains(out, "already points Codex at the relay.") || !strings.Contains(out, "Created "+envPath) {
		t.Fatalf("--write with config.toml as it was: %q", out)
	}
	code, out, errs = runCLI(t, opt, "", "codex-config", "--remove")
	if code != 0 || !strings.Contains(out, "Removed "+envPath+", which Codex Relay had created") || !strings.Contains(out, "Codex no longer uses the relay") {
		t.Fatalf("--remove: %d %q %q", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(codexHome, "config.toml")); !os.IsNotExist(err) {
		t.Fatal("config.toml is left")
	}
	code, out, _ = runCLI(t, opt, "", "codex-config", "--remove")
	if code != 0 || !strings.HasPrefix(out, "Nothing to undo") {
		t.Fatalf("--remove again: %d %q", code, out)
	}
	if code, _, errs := runCLI(t, opt, "", "codex-config", "--write", "--remove"); code != 2 || !strings.Contains(errs, "--write or --remove, not both") {
		t.Fatalf("both: %d %q", code, errs)
	}
}
