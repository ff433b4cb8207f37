package app

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// Written for Codex, the configuration points Codex's ChatGPT origin at the relay (so that
// /status reads the pool's limits there) and has Codex trust the relay's loopback authority
// beside everything it trusted before; the relay's one port then serves HTTPS too.
func TestCodexConfigPointsStatusAtThePool(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	codexHome, cfgDir, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	// The system's authorities, and a bundle of the user's own that Codex's .env named before.
	sysRoots := filepath.Join(tmp, "system.pem")
	os.WriteFile(sysRoots, []byte("# the system's authorities\n"), 0o644)
	corp := filepath.Join(tmp, "corp.pem")
	os.WriteFile(corp, []byte("# the company's authority\n"), 0o644)
	old := systemRoots
	systemRoots = []string{filepath.Join(tmp, "missing.pem"), sysRoots}
	t.Cleanup(func() { systemRoots = old })
	os.WriteFile(filepath.Join(codexHome, ".env"), []byte("OTHER=1\nexport SSL_CERT_FILE=\""+corp+"\"\n"), 0o600)

	env := map[string]string{"CODEX_HOME": codexHome, "CODEXRELAY_LISTEN": "127.0.0.1:7455"}
	a, err := OpenRelay(Options{ConfigDir: cfgDir, Keychain: k, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetLocalKey(true); err != nil { // a folder with settings
		t.Fatal(err)
	}
	if a.LoopbackTLS() != nil {
		t.Fatal("TLS before the configuration was written")
	}
	res, err := a.WriteCodexConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Limits, "pool's limits") {
		t.Fatalf("limits: %q", res.Limits)
	}
	b, _ := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	var cfg struct {
		ChatGPTBase string `toml:"chatgpt_base_url"`
	}
	if err := toml.Unmarshal(b, &cfg); err != nil || cfg.ChatGPTBase != "https://127.0.0.1:7455/backend-api/" {
		t.Fatalf("config.toml:\n%s", b)
	}
	bundle := filepath.Join(cfgDir, loopbackBundleFile)
	envFile, _ := os.ReadFile(filepath.Join(codexHome, ".env"))
	if string(envFile) != "OTHER=1\nSSL_CERT_FILE='"+bundle+"'\n" {
		t.Fatalf(".env:\n%s", envFile)
	}
	caPEM, _ := os.ReadFile(filepath.Join(cfgDir, loopbackCAFile))
	bb, _ := os.ReadFile(bundle)
	if !strings.HasPrefix(string(bb), "# the system's authorities\n# the company's authority\n") || !strings.HasSuffix(string(bb), string(caPEM)) ||
		!strings.Contains(string(caPEM), "BEGIN CERTIFICATE") {
		t.Fatalf("bundle:\n%s", bb)
	}
	// Again: nothing changes, and the company's authority stays in the bundle although .env
	// now names the relay's.
	if res, err := a.WriteCodexConfig(""); err != nil || res.Change != Unchanged {
		t.Fatalf("second write: %+v %v", res, err)
	}
	if again, _ := os.ReadFile(bundle); string(again) != string(bb) {
		t.Fatalf("the bundle changed:\n%s", again)
	}
	// The authority's key is the folder's keychain entry, not a leftover; no file holds it.
	if own, unknown, err := a.KeychainLeftovers(); err != nil || len(own)+len(unknown) != 0 {
		t.Fatalf("leftovers %v %v %v", own, unknown, err)
	}
	for _, f := range []string{loopbackCAFile, loopbackBundleFile, "settings.json"} {
		if b, _ := os.ReadFile(filepath.Join(cfgDir, f)); strings.Contains(string(b), "PRIVATE KEY") {
			t.Fatalf("%s holds a private key", f)
		}
	}

	// The relay's port: HTTPS with a certificate the bundle's authority vouches for, and plain
	// HTTP, on one port.
	ln, err := a.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: a.Proxy, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:"+port+"/backend-api/wham/accounts/check", nil)
	req.Header.Set("Chatgpt-Account-Id", "acct-codex")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("HTTPS: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "acct-codex") {
		t.Fatalf("HTTPS: %d %s", resp.StatusCode, body)
	}
	resp, err = client.Get("http://127.0.0.1:" + port + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("plain HTTP: %v", err)
	}
	resp.Body.Close()
}

// .env lines: others kept, the key replaced wherever and however it is written, or added.
func TestSetDotenv(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".env")
	for _, c := range []struct{ before, after string }{
		{"", "SSL_CERT_FILE='/b.pem'\n"},
		{"A=1", "A=1\nSSL_CERT_FILE='/b.pem'\n"},
		{"# c\nSSL_CERT_FILE=/old.pem\nB=2\n", "# c\nSSL_CERT_FILE='/b.pem'\nB=2\n"},
		{"  export SSL_CERT_FILE = \"/old.pem\"\r\n", "SSL_CERT_FILE='/b.pem'\n"},
		{"SSL_CERT_FILE_X=1\n", "SSL_CERT_FILE_X=1\nSSL_CERT_FILE='/b.pem'\n"},
	} {
		os.Remove(p)
		if c.before != "" {
			os.WriteFile(p, []byte(c.before), 0o600)
		}
		if v := dotenvValue(p, "SSL_CERT_FILE"); strings.Contains(c.before, "old.pem") != (v == "/old.pem") {
			t.Errorf("%q: read %q", c.before, v)
		}
		if err := setDotenv(p, "SSL_CERT_FILE", "/b.pem"); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != c.after {
			t.Errorf("%q -> %q, want %q", c.before, b, c.after)
		}
	}
}
