package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/codexrelay/codexrelay/app/localapi"
)

// CodexLogin describes the login the Codex CLI keeps (~/.codex/auth.json), without importing it.
type CodexLogin struct {
	Path  string
	Found bool
	// Kind is "chatgpt" for a ChatGPT sign-in, "openai" for an API key.
	Kind  string
	Email string // the ChatGPT sign-in's email, when it has one
	// Account is the name of the account that already holds this login ("" when none does).
	Account string
}

// FindCodexLogin looks at the Codex CLI's login: whether there is one to import, whose, and
// whether an account holds it already.
func (a *App) FindCodexLogin() CodexLogin {
	l := CodexLogin{Path: filepath.Join(a.CodexHome(), "auth.json")}
	b, err := readRegularFile(l.Path, maxAuthFile)
	if err != nil {
		return l
	}
	var auth codexAuth
	if json.Unmarshal(b, &auth) != nil {
		return l
	}
	var held func(Secret, AccountMeta) bool
	switch {
	case auth.Tokens != nil && auth.Tokens.AccessToken != "":
		claims := parseIDToken(auth.Tokens.IDToken)
		login := Secret{AccessToken: auth.Tokens.AccessToken, IDToken: auth.Tokens.IDToken, AccountID: cmpOr(auth.Tokens.AccountID, claims.AccountID)}
		l.Found, l.Kind, l.Email = true, "chatgpt", claims.Email
		held = func(s Secret, m AccountMeta) bool {
			return s.AccessToken == login.AccessToken || sameChatGPTLogin(s, m.Email, login, claims.Email)
		}
	case auth.APIKey != nil && *auth.APIKey != "":
		l.Found, l.Kind = true, "openai"
		held = func(s Secret, _ AccountMeta) bool { return s.APIKey == *auth.APIKey }
	default:
		return l
	}
	for _, m := range a.Accounts() {
		if c := a.credsFor(m.ID); c != nil && m.Kind == l.Kind {
			if s, err := c.secret(); err == nil && held(s, m) {
				l.Account = m.Name
				break
			}
		}
	}
	return l
}

// CodexSetup says whether the Codex CLI's configuration points it at this relay.
type CodexSetup struct {
	Path       string
	Configured bool
	// SelectsRelay says that model_provider names the provider block Codex Relay writes, and
	// the block is there, whatever address it names (after the relay moved, the block to rewrite).
	SelectsRelay bool
	// Why says what is missing when it is not configured ("no config.toml yet", "model_provider
	// is openai", ...).
	Why string
}

// CodexConfigured reads the Codex CLI's config.toml and says whether Codex sends its requests
// through this relay: model_provider names the relay's provider, whose base URL is this relay's
// and which sends the local key when one is required.
func (a *App) CodexConfigured() CodexSetup {
	st := CodexSetup{Path: filepath.Join(a.CodexHome(), "config.toml")}
	b, err := os.ReadFile(st.Path)
	if errors.Is(err, fs.ErrNotExist) {
		st.Why = "there is no " + st.Path + " yet"
		return st
	}
	if err != nil {
		st.Why = err.Error()
		return st
	}
	var cfg struct {
		ModelProvider  string                    `toml:"model_provider"`
		ModelProviders map[string]map[string]any `toml:"model_providers"`
	}
	if err := toml.Unmarshal(b, &cfg); err != nil {
		st.Why = "it is not valid TOML"
		return st
	}
	key, _ := a.localKeyForCodex()
	want := a.codexProvider(key)
	ours := cfg.ModelProviders[codexProviderID]
	st.SelectsRelay = cfg.ModelProvider == codexProviderID && ours != nil
	switch {
	case cfg.ModelProvider != codexProviderID:
		st.Why = fmt.Sprintf("Codex uses the provider %q", cmpOr(cfg.ModelProvider, "openai"))
	case ours == nil:
		st.Why = "it has no [model_providers." + codexProviderID + "] table"
	case ours["base_url"] != want["base_url"]:
		st.Why = fmt.Sprintf("it points Codex at %v, not at this relay (%v)", ours["base_url"], want["base_url"])
	case key != "" && ours["experimental_bearer_token"] == nil && ours["env_key"] != nil:
		st.Why = "Codex reads the local key from $" + codexLocalKeyEnv + ", which its desktop app and IDE extensions do not see: write the configuration again"
	case key != "" && ours["experimental_bearer_token"] != key:
		st.Why = "the relay requires its local key, and Codex does not send it (or sends an older one)"
	case ours["supports_standalone_web_search"] != want["supports_standalone_web_search"] || ours["requires_openai_auth"] != want["requires_openai_auth"]:
		st.Why = "the configuration predates the relay's web search and image generation: write it again so that Codex offers them"
	default:
		st.Configured = true
	}
	return st
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// RelayTest is what a test request through the relay found.
type RelayTest struct {
	Model   string
	Account string // the account that answered
	Status  int
	Elapsed time.Duration
	Reply   string // the start of the answer's text
}

// appliedPatience is how long TestRelay waits for the relay to apply the settings this process
// just wrote (it follows the file within a moment; the command line waits as long).
const appliedPatience = 5 * time.Second

// TestRelay sends one small real request through the relay listening on addr, as Codex would:
// the model Codex is configured with (or the catalog's first), a short prompt, the local key
// when one is required. It spends a few tokens on one account. It first waits for the relay
// to apply the settings this process wrote (an account just imported), as the command line
// does: a relay of another process reads them a moment later. It talks to the relay's port as
// a client does, with the local key (localapi.Bearer).
func (a *App) TestRelay(ctx context.Context, addr string) (RelayTest, error) {
	var t RelayTest
	base := "http://" + addr
	key, _ := a.LocalKey()
	local := localapi.NewClient(base, localapi.Bearer(key), 0)
	if err := waitGeneration(ctx, local, a.Settings().Generation); err != nil {
		return t, err
	}
	get := func(path string, v any) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s answered HTTP %d", path, resp.StatusCode)
		}
		return json.NewDecoder(resp.Body).Decode(v)
	}
	t.Model = a.codexModel()
	if t.Model == "" {
		var list struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := get("/v1/models", &list); err != nil {
			return t, fmt.Errorf("the relay could not list its models: %w", err)
		}
		if len(list.Data) == 0 {
			return t, errors.New("the relay has no model to offer: none of its accounts listed one")
		}
		t.Model = list.Data[0].ID
	}
	body, _ := json.Marshal(map[string]any{"model": t.Model, "input": "Reply with the single word OK.", "stream": false, "store": false})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/responses", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return t, fmt.Errorf("the relay did not answer: %w", err)
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	t.Status, t.Elapsed = resp.StatusCode, time.Since(start)
	if traces, err := local.Traces(ctx, 1); err == nil && len(traces) > 0 && len(traces[0].Attempts) > 0 {
		t.Account = traces[0].Attempts[len(traces[0].Attempts)-1].Account
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		json.Unmarshal(answer, &e)
		return t, fmt.Errorf("the relay answered HTTP %d: %s", resp.StatusCode, cmpOr(e.Error.Message, truncateText(strings.TrimSpace(string(answer)), 200)))
	}
	var r struct {
		OutputText string `json:"output_text"`
		Output     []struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	json.Unmarshal(answer, &r)
	t.Reply = r.OutputText
	for _, o := range r.Output {
		for _, c := range o.Content {
			t.Reply += c.Text
		}
	}
	t.Reply = truncateText(strings.TrimSpace(t.Reply), 80)
	return t, nil
}

// waitGeneration waits, up to appliedPatience, for the relay to report on /health that it
// applied settings generation gen.
func waitGeneration(ctx context.Context, relay *localapi.Client, gen uint64) error {
	ctx, cancel := context.WithTimeout(ctx, appliedPatience)
	defer cancel()
	for {
		h, err := relay.Health(ctx)
		if err == nil && h.SettingsGeneration >= gen {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("the relay did not answer: %w", err)
			}
			return fmt.Errorf("the relay has not applied the new settings within %d s (its log says why)", int(appliedPatience.Seconds()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// codexModel is the model Codex's config.toml names, or "".
func (a *App) codexModel() string {
	b, err := os.ReadFile(filepath.Join(a.CodexHome(), "config.toml"))
	if err != nil {
		return ""
	}
	var cfg struct {
		Model string `toml:"model"`
	}
	toml.Unmarshal(b, &cfg)
	return cfg.Model
}

func truncateText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// FirstRun is what UseCodexLogin did, step by step.
type FirstRun struct {
	Account  AccountMeta
	Imported Outcome
	Config   CodexConfigWrite
	Test     RelayTest
	// TestErr is why the test request failed; the import and the configuration stand.
	TestErr error
}

// UseCodexLogin is the first run's one action: import the Codex CLI's login, point Codex at the
// relay (config.toml and .env, each after a backup) and send a test request through the relay
// on addr ("" to skip the test, when the relay is not serving). An error in the first two steps
// stops it.
func (a *App) UseCodexLogin(ctx context.Context, addr string) (FirstRun, error) {
	var fr FirstRun
	var err error
	if fr.Account, fr.Imported, err = a.ImportCodex(""); err != nil {
		return fr, err
	}
	if err = a.pointCodexAndTest(ctx, addr, &fr); err != nil {
		return fr, fmt.Errorf("the Codex login was imported as %q, but Codex could not be configured: %w", fr.Account.Name, err)
	}
	return fr, nil
}

// PointCodexAndTest is the first run's way on after an account was added another way (an API
// key, a ChatGPT sign-in): it points Codex at the relay (config.toml and .env, each after a
// backup) and sends the test request through the relay on addr ("" skips it). Its FirstRun
// imported nothing (Imported is "").
func (a *App) PointCodexAndTest(ctx context.Context, addr string) (FirstRun, error) {
	var fr FirstRun
	err := a.pointCodexAndTest(ctx, addr, &fr)
	return fr, err
}

func (a *App) pointCodexAndTest(ctx context.Context, addr string, fr *FirstRun) (err error) {
	if fr.Config, err = a.WriteCodexConfig(""); err != nil {
		return err
	}
	if addr != "" {
		fr.Test, fr.TestErr = a.TestRelay(ctx, addr)
	}
	return nil
}
