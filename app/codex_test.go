package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
)

func TestCodexConfigMergeKeepsEverythingElse(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"CODEX_HOME": dir, "CODEXRELAY_LISTEN": "127.0.0.1:7455"}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	a, err := OpenRelay(Options{ConfigDir: t.TempDir(), Getenv: func(k string) string { return env[k] }, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	original := `# my Codex settings
model = "gpt-5-codex" # favourite
model_provider = "openai"
approval_policy = "on-request"

[model_providers.ollama]
# local models
name = "Ollama"
base_url = "http://localhost:11434/v1"

[model_providers.codexrelay]
name = "old name"
base_url = "http://127.0.0.1:9999/v1"
request_max_retries = 7

[profiles.fast]
model = "gpt-5-mini"
`
	path := filepath.Join(dir, "config.toml")
	os.WriteFile(path, []byte(original), 0o640)
	res, err := a.WriteCodexConfig("")
	if err != nil {
		t.Fatal(err)
	}
	backup := res.Backup
	if backup != path+".bak-20261130T120000Z" || res.Change != ConfigUpdated {
		t.Fatalf("backup %q", backup)
	}
	if b, _ := os.ReadFile(backup); string(b) != original {
		t.Fatal("the backup is not the original")
	}
	merged, _ := os.ReadFile(path)
	for _, want := range []string{"# my Codex settings", "# favourite", "# local models", "[profiles.fast]", "request_max_retries = 7"} {
		if !strings.Contains(string(merged), want) {
			t.Errorf("lost %q:\n%s", want, merged)
		}
	}
	var cfg struct {
		Model          string                    `toml:"model"`
		ModelProvider  string                    `toml:"model_provider"`
		Approval       string                    `toml:"approval_policy"`
		ModelProviders map[string]map[string]any `toml:"model_providers"`
		Profiles       map[string]map[string]any `toml:"profiles"`
	}
	if err := toml.Unmarshal(merged, &cfg); err != nil {
		t.Fatalf("merged config does not parse: %v\n%s", err, merged)
	}
	relay := cfg.ModelProviders["codexrelay"]
	if cfg.ModelProvider != "codexrelay" || cfg.Model != "gpt-5-codex" || cfg.Approval != "on-request" ||
		relay["base_url"] != "http://127.0.0.1:7455/v1" || relay["wire_api"] != "responses" || relay["name"] != "Codex Relay" ||
		relay["model_catalog_url"] != "http://127.0.0.1:7455/v1/models" || relay["request_max_retries"] != int64(7) ||
		relay["supports_websockets"] != true || relay["supports_standalone_web_search"] != true ||
		cfg.ModelProviders["ollama"]["name"] != "Ollama" || cfg.Profiles["fast"]["model"] != "gpt-5-mini" {
		t.Fatalf("merged config %+v", cfg)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", st.Mode())
	}
	// Idempotent: a second write changes nothing and makes no backup.
	now = now.Add(time.Hour)
	if res, err := a.WriteCodexConfig(""); err != nil || res.Backup != "" || res.Change != Unchanged {
		t.Fatalf("second write: %+v %v", res, err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(merged) {
		t.Fatal("a second write changed the file")
	}
	// A config that is not TOML is left alone.
	os.WriteFile(path, []byte("model = [unclosed\n"), 0o600)
	if _, err := a.WriteCodexConfig(""); err == nil || !strings.Contains(err.Error(), "not valid TOML") {
		t.Fatalf("broken config: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "model = [unclosed\n" {
		t.Fatal("a broken config was changed")
	}
	// No config yet: one is created with the block only.
	os.Remove(path)
	if res, err := a.WriteCodexConfig(""); err != nil || res.Change != ConfigCreated || res.Backup != "" {
		t.Fatal(res, err)
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), "model_provider = \"codexrelay\"\n\n[model_providers.codexrelay]\n") {
		t.Fatalf("new config:\n%s", b)
	}
}

func TestImportCodexAuthFiles(t *testing.T) {
	k := testKeychain(t)
	dir := t.TempDir()
	a, err := OpenRelay(Options{ConfigDir: t.TempDir(), Keychain: k, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, m := range a.Accounts() {
			k.Delete(accountUser(m.ID))
		}
	})
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		return p
	}
	access := jwt(map[string]any{"exp": time.Now().Add(time.Hour).Unix()})
	tokens := write("tokens.json", `{"OPENAI_API_KEY":null,"tokens":{"id_token":"`+idToken("me@example.com", "acct-7")+`","access_token":"`+access+`","refresh_token":"rt-x","account_id":"acct-7"},"last_refresh":"2026-11-29T10:00:00Z"}`)
	m, outcome, err := a.ImportCodex(tokens)
	if err != nil || outcome != Added {
		t.Fatal(outcome, err)
	}
	if m.Name != "me@example.com" || m.Kind != "chatgpt" {
		t.Fatalf("account %+v", m)
	}
	c, _ := a.credsFor(m.ID).Credential(t.Context())
	if c.Token != access || c.AccountID != "acct-7" {
		t.Fatalf("credential %+v", c)
	}
	// Importing the same sign-in again renews the account instead of adding a second one.
	if _, outcome, err := a.ImportCodex(tokens); err != nil || len(a.Accounts()) != 1 || outcome != Unchanged {
		t.Fatalf("re-import: %v %v, %d accounts", outcome, err, len(a.Accounts()))
	}
	key := write("key.json", `{"OPENAI_API_KEY":"sk-imported","tokens":null}`)
	m, _, err = a.ImportCodex(key)
	if err != nil || m.Kind != "openai" || m.BaseURL != "https://api.openai.com/v1" {
		t.Fatalf("api key import: %+v %v", m, err)
	}
	for name, content := range map[string]string{"empty.json": `{}`, "bad.json": `{"tokens":`} {
		if _, _, err := a.ImportCodex(write(name, content)); err == nil {
			t.Errorf("%s imported", name)
		}
	}
	if _, _, err := a.ImportCodex(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "codex login") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestStartAtLogin(t *testing.T) {
	dir := t.TempDir()
	a, _ := OpenRelay(Options{ConfigDir: t.TempDir(), Getenv: func(string) string { return "" }, AutostartDir: dir})
	if err := a.Set(SettingStartAtLogin, "true"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "codexrelay.desktop"))
	if err != nil || !strings.Contains(string(b), "Exec=") || !a.Settings().StartAtLogin {
		t.Fatalf("entry %q %v", b, err)
	}
	if err := a.Set(SettingStartAtLogin, "false"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "codexrelay.desktop")); !os.IsNotExist(err) || a.Settings().StartAtLogin {
		t.Fatal("entry not removed")
	}
}

func TestCodexCommands(t *testing.T) {
	k := testKeychain(t)
	codexHome := t.TempDir()
	env := map[string]string{"CODEX_HOME": codexHome}
	opt := Options{ConfigDir: t.TempDir(), Keychain: k, Getenv: func(key string) string { return env[key] }}
	os.WriteFile(filepath.Join(codexHome, "auth.json"), []byte(`{"OPENAI_API_KEY":"sk-from-codex"}`), 0o600)
	code, out, errs := runCLI(t, opt, "", "accounts", "import-codex")
	if code != 0 || !strings.Contains(out, "codex-config --write") || strings.Contains(out, "sk-from-codex") {
		t.Fatalf("import: %d %s %s", code, out, errs)
	}
	if code, _, errs := runCLI(t, opt, "", "accounts", "rename", "codex-api-key", "work"); code != 0 {
		t.Fatal(errs)
	}
	a, _ := OpenRelay(opt)
	t.Cleanup(func() {
		for _, m := range a.Accounts() {
			k.Delete(accountUser(m.ID))
		}
	})
	if a.Accounts()[0].Name != "work" {
		t.Fatalf("accounts %+v", a.Accounts())
	}
	code, out, _ = runCLI(t, opt, "", "codex-config")
	if code != 0 || !strings.Contains(out, `model_catalog_url = "http://127.0.0.1:7455/v1/models"`) || !strings.Contains(out, `wire_api = "responses"`) {
		t.Fatalf("codex-config: %s", out)
	}
	code, out, _ = runCLI(t, opt, "", "codex-config", "--write")
	if code != 0 || !strings.Contains(out, "points Codex at the relay") {
		t.Fatalf("write: %s", out)
	}
	code, out, _ = runCLI(t, opt, "", "codex-config", "--write")
	if code != 0 || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second write: %s", out)
	}
}

// With the local key on, the written block carries the key itself (experimental_bearer_token),
// so that every Codex front end (the CLI, the desktop app, the IDE extensions, which do not
// inherit a shell's environment) sends it without a variable; the file becomes the user's
// alone; an older block that had Codex read $CODEXRELAY_API_KEY is replaced and is reported
// as not working until then. The block shown on screen never holds the key.
func TestCodexConfigCarriesTheLocalKey(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	dir := t.TempDir()
	env := map[string]string{"CODEX_HOME": dir, "CODEXRELAY_LISTEN": "127.0.0.1:7455"}
	opt := Options{ConfigDir: t.TempDir(), Keychain: k, Getenv: func(k string) string { return env[k] }}
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	key, err := a.SetLocalKey(true)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	old := "model = \"gpt-5-codex\"\nmodel_provider = \"codexrelay\"\n\n[model_providers.codexrelay]\nname = \"Codex Relay\"\n" +
		"base_url = \"http://127.0.0.1:7455/v1\"\nwire_api = \"responses\"\nenv_key = \"CODEXRELAY_API_KEY\"\n"
	os.WriteFile(path, []byte(old), 0o644)
	if st := a.CodexConfigured(); st.Configured || !strings.Contains(st.Why, "desktop app") {
		t.Fatalf("an env_key block: %+v", st)
	}
	if shown := a.CodexConfig(); strings.Contains(shown, key) || !strings.Contains(shown, "experimental_bearer_token") {
		t.Fatalf("the block shown holds the key, or no place for it:\n%s", shown)
	}
	if _, err := a.WriteCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var cfg struct {
		ModelProviders map[string]map[string]any `toml:"model_providers"`
	}
	if err := toml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	ours := cfg.ModelProviders["codexrelay"]
	// Codex is not signed in: nothing asks for its own sign-in (its TUI would open on the
	// sign-in screen).
	if ours["experimental_bearer_token"] != key || ours["env_key"] != nil || ours["requires_openai_auth"] != nil ||
		ours["supports_standalone_web_search"] != true {
		t.Fatalf("written block: %+v", ours)
	}
	// Signed in with ChatGPT, Codex may be asked for its sign-in's features (image
	// generation), and still sends the relay the key, never its login.
	os.WriteFile(filepath.Join(dir, "auth.json"), []byte(`{"auth_mode":"chatgpt","tokens":{"access_token":"at","refresh_token":"rt","id_token":"x.e30.y"}}`), 0o600)
	if st := a.CodexConfigured(); st.Configured || !strings.Contains(st.Why, "write it again") {
		t.Fatalf("after Codex signed in: %+v", st)
	}
	if _, err := a.WriteCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	cfg.ModelProviders = nil
	if err := toml.Unmarshal(b, &cfg); err != nil || cfg.ModelProviders["codexrelay"]["requires_openai_auth"] != true ||
		cfg.ModelProviders["codexrelay"]["experimental_bearer_token"] != key {
		t.Fatalf("signed in: %s", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("config.toml holds the key with mode %v", st.Mode().Perm())
	}
	if st := a.CodexConfigured(); !st.Configured {
		t.Fatalf("after the write: %+v", st)
	}
	// A new key: the written one no longer works, and the check says so.
	if _, err := a.SetLocalKey(true); err != nil {
		t.Fatal(err)
	}
	if st := a.CodexConfigured(); st.Configured || !strings.Contains(st.Why, "older one") {
		t.Fatalf("after a new key: %+v", st)
	}
	// Off: the block loses the key.
	if _, err := a.SetLocalKey(false); err != nil {
		t.Fatal(err)
	}
	a.WriteCodexConfig("")
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "experimental_bearer_token") || strings.Contains(string(b), "crk-") {
		t.Fatalf("the key stayed after it was turned off:\n%s", b)
	}
	// ... and requires_openai_auth with it: without a bearer token Codex would send the relay
	// its own ChatGPT token, and a Codex never signed in would not read the relay's models.
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "requires_openai_auth") || !strings.Contains(string(b), "supports_standalone_web_search = true") {
		t.Fatalf("the block without the key:\n%s", b)
	}
}

// The block names the provider "OpenAI", which makes Codex compact remotely, once an account
// can answer a remote compaction; a pool of Chat Completions accounts alone keeps Codex's local
// compaction (proxy/testdata/codex-0.171/README.md, "Compaction").
func TestCodexProviderNameFollowsWhetherThePoolCompactsRemotely(t *testing.T) {
	env := map[string]string{"CODEX_HOME": t.TempDir()}
	a, err := OpenRelay(Options{ConfigDir: t.TempDir(), Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	name := func() any { return a.codexProvider("")["name"] }
	if got := name(); got != "Codex Relay" {
		t.Fatalf("an empty pool: name %v", got)
	}
	if _, err := a.AddAccount(NewAccount{Name: "llama", Kind: "openai", BaseURL: "http://127.0.0.1:9/v1", API: "chat"}, Secret{APIKey: "sk-llama"}); err != nil {
		t.Fatal(err)
	}
	if got := name(); got != "Codex Relay" {
		t.Fatalf("a Chat Completions pool: name %v, want Codex's local compaction", got)
	}
	if _, err := a.AddAccount(NewAccount{Name: "vllm", Kind: "openai", BaseURL: "http://127.0.0.1:9/v1"}, Secret{APIKey: "sk-vllm"}); err != nil {
		t.Fatal(err)
	}
	if got := name(); got != "Codex Relay" {
		t.Fatalf("another Responses server: name %v, want Codex's local compaction", got)
	}
	if _, err := a.AddAccount(NewAccount{Name: "key", Kind: "openai", BaseURL: "https://api.openai.com/v1"}, Secret{APIKey: "sk-key"}); err != nil {
		t.Fatal(err)
	}
	if got := name(); got != "OpenAI" {
		t.Fatalf("an OpenAI API key: name %v, want OpenAI (remote compaction)", got)
	}
}

// A relay that listens on every interface (":7455", "0.0.0.0:7455", "[::]:7455") is reached by
// Codex on loopback: the block never names an empty host.
func TestCodexReachesARelayOfEveryInterfaceOnLoopback(t *testing.T) {
	for _, listen := range []string{":7455", "0.0.0.0:7455", "[::]:7455"} {
		a, err := Open(Options{ConfigDir: t.TempDir(), Getenv: func(k string) string {
			return map[string]string{"CODEXRELAY_LISTEN": listen}[k]
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(a.CodexConfig(), `base_url = "http://127.0.0.1:7455/v1"`) {
			t.Errorf("%s:\n%s", listen, a.CodexConfig())
		}
	}
}
