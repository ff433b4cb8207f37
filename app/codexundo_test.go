package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// codexUndoRelay is a relay over a fresh folder with settings that configures codexHome, with
// the environment env (CODEX_HOME set) and the test's own system authorities.
func codexUndoRelay(t *testing.T, codexHome string, env map[string]string) *Relay {
	t.Helper()
	k := testKeychain(t)
	cleanKeychain(t, k)
	fakeSystemRoots(t, testCert(t, "system root"))
	env["CODEX_HOME"] = codexHome
	a, err := OpenRelay(Options{ConfigDir: t.TempDir(), Keychain: k, Getenv: func(key string) string { return env[key] }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetLocalKey(true); err != nil {
		t.Fatal(err)
	}
	return a
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// --remove takes out what the write put in (the provider table, model_provider,
// chatgpt_base_url, SSL_CERT_FILE, the NO_PROXY entries), puts back what they held, keeps what
// the user changed since, backs each file up and says what it did; run again, it finds
// nothing to undo.
func TestRemoveUndoesTheWriteAndKeepsTheUsersChanges(t *testing.T) {
	codexHome := t.TempDir()
	corp := filepath.Join(t.TempDir(), "corp.pem")
	os.WriteFile(corp, testCert(t, "the company's root"), 0o644)
	cfgPath, envPath := filepath.Join(codexHome, "config.toml"), filepath.Join(codexHome, ".env")
	before := "model = \"gpt-5.5\"\nmodel_provider = \"mine\"\nchatgpt_base_url = \"https://chatgpt.example/backend-api/\"\n\n" +
		"[model_providers.mine]\nname = \"Mine\"\nbase_url = \"http://127.0.0.1:9/v1\"\n"
	os.WriteFile(cfgPath, []byte(before), 0o600)
	os.WriteFile(envPath, []byte("A=1\nSSL_CERT_FILE="+corp+"\n"), 0o600)
	a := codexUndoRelay(t, codexHome, map[string]string{"NO_PROXY": ".corp.example"})

	res, err := a.WriteCodexConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if res.Env.NoProxy != ".corp.example,127.0.0.1,localhost,::1" {
		t.Fatalf("NO_PROXY %q: the environment's entries are kept (the .env wins over it)", res.Env.NoProxy)
	}
	// The user changes other things meanwhile.
	os.WriteFile(cfgPath, []byte(readText(t, cfgPath)+"\n[profiles.deep]\nmodel = \"o3\"\n"), 0o600)
	os.WriteFile(envPath, []byte(readText(t, envPath)+"B=2\n"), 0o600)

	r, err := a.RemoveCodexConfig("")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := toml.Unmarshal([]byte(readText(t, cfgPath)), &cfg); err != nil {
		t.Fatal(err)
	}
	providers, _ := cfg["model_providers"].(map[string]any)
	profiles, _ := cfg["profiles"].(map[string]any)
	if cfg["model_provider"] != "mine" || cfg["chatgpt_base_url"] != "https://chatgpt.example/backend-api/" || cfg["model"] != "gpt-5.5" ||
		providers["codexrelay"] != nil || providers["mine"] == nil || profiles["deep"] == nil {
		t.Fatalf("config.toml after --remove:\n%s", readText(t, cfgPath))
	}
	if got := readText(t, envPath); got != "A=1\nSSL_CERT_FILE='"+corp+"'\nB=2\n" {
		t.Fatalf(".env after --remove:\n%s", got)
	}
	if !r.Changed() || r.Backup == "" || r.Env.Backup == "" || r.Deleted || r.Env.Deleted {
		t.Fatalf("removal: %+v", r)
	}
	said := strings.Join(r.Lines(nil), "\n")
	for _, want := range []string{`model_provider is "mine" again`, "removed the [model_providers.codexrelay] table", "SSL_CERT_FILE names " + corp + " again", "removed NO_PROXY", r.Backup, r.Env.Backup} {
		if !strings.Contains(said, want) {
			t.Errorf("the removal does not say %q:\n%s", want, said)
		}
	}
	if b := readText(t, r.Backup); !strings.Contains(b, `model_provider = "codexrelay"`) {
		t.Fatalf("the backup is not the file as the relay left it:\n%s", b)
	}
	// Nothing is left to undo, and nothing is recorded any more.
	again, err := a.RemoveCodexConfig("")
	if err != nil || again.Changed() || !strings.HasPrefix(again.Lines(nil)[0], "Nothing to undo") {
		t.Fatalf("second removal: %+v %v", again, err)
	}
	if _, err := os.Stat(filepath.Join(a.ConfigDir(), codexPreviousFile)); !os.IsNotExist(err) {
		t.Fatal("the record of what Codex held is left")
	}
}

// Where the relay created the files, --remove takes them away again once nothing but the
// relay's is in them; a NO_PROXY the user extended keeps the user's entries.
func TestRemoveTakesAwayTheFilesTheRelayCreated(t *testing.T) {
	codexHome := t.TempDir()
	a := codexUndoRelay(t, codexHome, map[string]string{})
	if _, err := a.WriteCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	r, err := a.RemoveCodexConfig("")
	if err != nil || !r.Deleted || !r.Env.Deleted {
		t.Fatalf("removal: %+v %v", r, err)
	}
	for _, f := range []string{"config.toml", ".env"} {
		if _, err := os.Stat(filepath.Join(codexHome, f)); !os.IsNotExist(err) {
			t.Errorf("%s is left", f)
		}
	}
	// Again, with an entry of the user's own added to NO_PROXY since.
	if _, err := a.WriteCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	envPath := filepath.Join(codexHome, ".env")
	os.WriteFile(envPath, []byte(strings.Replace(readText(t, envPath), "::1'", "::1,build.local'", 1)), 0o600)
	if _, err := a.RemoveCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, envPath); got != "NO_PROXY='build.local'\n" {
		t.Fatalf(".env: %q", got)
	}
}

// A configuration written by a version that recorded nothing is undone too: model_provider
// comes back from the newest backup that does not name the relay, and a NO_PROXY of loopback
// entries only, or an SSL_CERT_FILE naming the relay's bundle, goes.
func TestRemoveWithoutARecord(t *testing.T) {
	codexHome := t.TempDir()
	cfgPath, envPath := filepath.Join(codexHome, "config.toml"), filepath.Join(codexHome, ".env")
	os.WriteFile(cfgPath, []byte("model_provider = \"mine\"\n\n[model_providers.mine]\nbase_url = \"http://127.0.0.1:9/v1\"\n"), 0o600)
	a := codexUndoRelay(t, codexHome, map[string]string{})
	if _, err := a.WriteCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(a.ConfigDir(), codexPreviousFile))
	r, err := a.RemoveCodexConfig("")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	toml.Unmarshal([]byte(readText(t, cfgPath)), &cfg)
	if cfg["model_provider"] != "mine" || cfg["chatgpt_base_url"] != nil {
		t.Fatalf("config.toml:\n%s", readText(t, cfgPath))
	}
	if got := readText(t, envPath); got != "" || r.Env.Deleted {
		t.Fatalf(".env: %q (%+v)", got, r.Env)
	}
}

// A file that nothing but the relay's writes changed is given back byte for byte as it was
// before them (no blank line where the relay's block was, no quotes added), after any number
// of writes (the backup that holds the original outlives the pruning of the others).
func TestRemoveGivesTheFilesBackByteForByte(t *testing.T) {
	codexHome := t.TempDir()
	cfgPath, envPath := filepath.Join(codexHome, "config.toml"), filepath.Join(codexHome, ".env")
	cfg := "# my settings\n[profiles.deep]\nmodel = \"o3\"\r\n[model_providers.mine]\nname = \"Mine\"\nbase_url = \"http://127.0.0.1:9/v1\""
	env := "export A=1\nNO_PROXY=\"build.local\""
	os.WriteFile(cfgPath, []byte(cfg), 0o600)
	os.WriteFile(envPath, []byte(env), 0o600)
	a := codexUndoRelay(t, codexHome, map[string]string{})
	for i, port := range []string{"7455", "7456", "7457", "7458", "7459"} {
		if err := a.Set(SettingListen, "127.0.0.1:"+port); err != nil {
			t.Fatal(err)
		}
		res, err := a.WriteCodexConfig("")
		if err != nil || res.Change != ConfigUpdated {
			t.Fatalf("write %d: %+v %v", i, res, err)
		}
	}
	if got := readText(t, cfgPath); !strings.Contains(got, "127.0.0.1:7459") {
		t.Fatalf("config.toml after the writes:\n%s", got)
	}
	r, err := a.RemoveCodexConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if got := readText(t, cfgPath); got != cfg {
		t.Errorf("config.toml after --remove:\n%q\nwant\n%q", got, cfg)
	}
	if got := readText(t, envPath); got != env {
		t.Errorf(".env after --remove:\n%q\nwant\n%q", got, env)
	}
	if !r.Restored || !r.Env.Restored || r.Deleted || r.Env.Deleted || !strings.Contains(readText(t, r.Backup), "127.0.0.1:7459") {
		t.Fatalf("removal: %+v", r)
	}
	if said := strings.Join(r.Lines(nil), "\n"); !strings.Contains(said, "Put "+cfgPath+" back as it was before Codex Relay changed it, byte for byte") ||
		!strings.Contains(said, `removed the [model_providers.codexrelay] table`) {
		t.Fatalf("the removal says:\n%s", said)
	}
}

// A table the user put under the relay's provider ([model_providers.codexrelay.http_headers])
// goes with the provider: left alone it would be a provider without name or base_url, which
// Codex refuses. A change elsewhere in the file is kept, so the file is edited, not restored.
func TestRemoveTakesTheTablesUnderTheRelaysProvider(t *testing.T) {
	codexHome := t.TempDir()
	cfgPath := filepath.Join(codexHome, "config.toml")
	os.WriteFile(cfgPath, []byte("model_provider = \"mine\"\n\n[model_providers.mine]\nname = \"Mine\"\nbase_url = \"http://127.0.0.1:9/v1\"\n"), 0o600)
	a := codexUndoRelay(t, codexHome, map[string]string{})
	if _, err := a.WriteCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cfgPath, []byte(readText(t, cfgPath)+"\n[model_providers.codexrelay.http_headers]\nX-Team = \"a\"\n\n[profiles.deep]\nmodel = \"o3\"\n"), 0o600)
	r, err := a.RemoveCodexConfig("")
	if err != nil {
		t.Fatal(err)
	}
	got := readText(t, cfgPath)
	var c map[string]any
	if err := toml.Unmarshal([]byte(got), &c); err != nil {
		t.Fatal(err)
	}
	providers, _ := c["model_providers"].(map[string]any)
	profiles, _ := c["profiles"].(map[string]any)
	if _, left := providers["codexrelay"]; left || providers["mine"] == nil || profiles["deep"] == nil || c["model_provider"] != "mine" || strings.Contains(got, "X-Team") {
		t.Fatalf("config.toml after --remove:\n%s", got)
	}
	if r.Restored || r.Deleted || !strings.Contains(strings.Join(r.Config, "; "), "removed the [model_providers.codexrelay.http_headers] table") {
		t.Fatalf("removal: %+v", r)
	}
}

// A key the user appended after the relay's table (TOML reads it as the table's) is no reason
// to take the file for the relay's alone: the file stays, with the key at its top, where it was
// meant; a key the top sets already is left out, and said.
func TestRemoveKeepsTheKeysAppendedAfterTheRelaysTable(t *testing.T) {
	codexHome := t.TempDir()
	cfgPath := filepath.Join(codexHome, "config.toml")
	a := codexUndoRelay(t, codexHome, map[string]string{})
	if _, err := a.WriteCodexConfig(""); err != nil { // the relay creates the file
		t.Fatal(err)
	}
	os.WriteFile(cfgPath, []byte(readText(t, cfgPath)+"model = \"o3\"\n# review with the big one\nreview_model = \"gpt-5.5\"\nhttp_headers = { X = \"1\" }\n"), 0o600)
	r, err := a.RemoveCodexConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readText(t, cfgPath), "model = \"o3\"\n# review with the big one\nreview_model = \"gpt-5.5\"\n"; got != want {
		t.Fatalf("config.toml after --remove:\n%q\nwant\n%q", got, want)
	}
	if r.Deleted || r.Restored || !strings.Contains(strings.Join(r.Config, "; "), "kept model, review_model, which you added after the relay's table") {
		t.Fatalf("removal: %+v", r)
	}

	// The top sets model already: the table's is left out.
	os.WriteFile(cfgPath, []byte("model = \"gpt-5.5\"\n"), 0o600)
	if _, err := a.WriteCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cfgPath, []byte(readText(t, cfgPath)+"model = \"o3\"\n"), 0o600)
	if r, err = a.RemoveCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, cfgPath); got != "model = \"gpt-5.5\"\n" || !strings.Contains(strings.Join(r.Config, "; "), "left out model of the relay's table") {
		t.Fatalf("config.toml after --remove: %q (%+v)", got, r)
	}
}
