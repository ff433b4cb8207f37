package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/codexrelay/codexrelay/app/looptls"
)

// testCert is a self-signed certificate (PEM) named cn, to stand for an authority in a file.
func testCert(t *testing.T, cn string) []byte {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// certNames lists the subjects of the PEM certificates in b, in order.
func certNames(t *testing.T, b []byte) []string {
	t.Helper()
	var names []string
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			return names
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil || blk.Type != "CERTIFICATE" {
			t.Fatalf("the bundle holds a %s block that is no certificate", blk.Type)
		}
		names = append(names, c.Subject.CommonName)
	}
}

// fakeSystemRoots points systemRoots at a file of the test's own holding the given authorities.
func fakeSystemRoots(t *testing.T, certs ...[]byte) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "system.pem")
	if err := os.WriteFile(f, []byte(strings.Join(bytesToStrings(certs), "")), 0o644); err != nil {
		t.Fatal(err)
	}
	old := systemRoots
	systemRoots = []string{filepath.Join(t.TempDir(), "missing.pem"), f}
	t.Cleanup(func() { systemRoots = old })
	return f
}

func bytesToStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// Written for Codex, the configuration points Codex's ChatGPT origin at the relay (so that
// /status reads the pool's limits there) and has Codex trust the relay's loopback authority
// beside everything it trusted before; the relay's one port then serves HTTPS too.
func TestCodexConfigPointsStatusAtThePool(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	codexHome, cfgDir, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	// The system's authorities, and a bundle of the user's own that Codex's .env named before
	// (which holds the system's first one too: it is in the bundle once).
	sysCert, otherSys, corpCert := testCert(t, "system root"), testCert(t, "another system root"), testCert(t, "the company's root")
	fakeSystemRoots(t, sysCert, otherSys)
	corp := filepath.Join(tmp, "corp.pem")
	os.WriteFile(corp, append(append([]byte("# the company's authorities\n"), corpCert...), sysCert...), 0o644)
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
	envPath := filepath.Join(codexHome, ".env")
	envFile, _ := os.ReadFile(envPath)
	if string(envFile) != "OTHER=1\nSSL_CERT_FILE='"+bundle+"'\nNO_PROXY='127.0.0.1,localhost,::1'\n" {
		t.Fatalf(".env:\n%s", envFile)
	}
	// The .env that was there is backed up, and the write says what it set there.
	if res.Env.Change != ConfigUpdated || res.Env.Backup == "" || res.Env.CertFile != bundle {
		t.Fatalf("the .env write: %+v", res.Env)
	}
	if b, err := os.ReadFile(res.Env.Backup); err != nil || !strings.Contains(string(b), corp) {
		t.Fatalf("the .env backup: %q %v", b, err)
	}
	if s := res.Env.Summary(nil); !strings.Contains(s, "SSL_CERT_FILE") || !strings.Contains(s, "NO_PROXY") || !strings.Contains(s, res.Env.Backup) {
		t.Fatalf("the .env summary: %s", s)
	}
	caPEM, _ := os.ReadFile(filepath.Join(cfgDir, loopbackCAFile))
	bb, _ := os.ReadFile(bundle)
	if got := strings.Join(certNames(t, bb), "|"); got != "system root|another system root|the company's root|Codex Relay loopback CA" {
		t.Fatalf("bundle: %s", got)
	}
	if !strings.HasSuffix(string(bb), string(caPEM)) || !looptls.Current(caPEM) {
		t.Fatalf("bundle:\n%s", bb)
	}
	// Again: nothing changes, and the company's authority stays in the bundle although .env
	// now names the relay's.
	if res, err := a.WriteCodexConfig(""); err != nil || res.Change != Unchanged || res.Env.Change != Unchanged || res.Env.Backup != "" {
		t.Fatalf("second write: %+v %v", res, err)
	}
	if again, _ := os.ReadFile(bundle); string(again) != string(bb) {
		t.Fatalf("the bundle changed:\n%s", again)
	}
	// The authority's key is the folder's keychain entry, not a leftover; no file holds it.
	if own, unknown, err := a.KeychainLeftovers(); err != nil || len(own)+len(unknown) != 0 {
		t.Fatalf("leftovers %v %v %v", own, unknown, err)
	}
	for _, f := range []string{loopbackCAFile, loopbackBundleFile, "settings.json", codexPreviousFile} {
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

// The serving certificate is made once per process and renewed before it ends: a relay that
// runs for months serves a valid one at each handshake (the clock is the test's).
func TestTheServingCertificateIsRenewedBeforeItEnds(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	fakeSystemRoots(t, testCert(t, "system root"))
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a, err := OpenRelay(Options{ConfigDir: t.TempDir(), Keychain: k, Now: clock, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetLocalKey(true); err != nil {
		t.Fatal(err)
	}
	caPEM, _, err := a.EnsureLoopbackCA()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	cfg := a.LoopbackTLS()
	serve := func() *x509.Certificate {
		t.Helper()
		c, err := cfg.GetCertificate(&tls.ClientHelloInfo{ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1", CurrentTime: clock()}); err != nil {
			t.Fatalf("at %s the relay serves a certificate that does not verify: %v", clock().Format(time.DateOnly), err)
		}
		return c.Leaf
	}
	first := serve()
	// A year of handshakes, one a day: each certificate verifies on its day, and a new one is
	// made only when the last has less than looptls.RenewBefore left.
	serials := map[string]bool{first.SerialNumber.String(): true}
	for day := 1; day <= 365; day++ {
		mu.Lock()
		now = now.Add(24 * time.Hour)
		mu.Unlock()
		c := serve()
		if c.NotAfter.Sub(clock()) < looptls.RenewBefore-24*time.Hour {
			t.Fatalf("day %d: the certificate ends in %s", day, c.NotAfter.Sub(clock()))
		}
		serials[c.SerialNumber.String()] = true
	}
	// 90-day certificates renewed 30 days before their end: one every 60 days.
	if n := len(serials); n < 6 || n > 8 {
		t.Fatalf("%d serving certificates in a year", n)
	}
	if a.tls.renewed != len(serials) {
		t.Fatalf("%d certificates signed for %d served", a.tls.renewed, len(serials))
	}
}

// An authority made by an older version, which constrained DNS names and addresses only, is
// replaced by one with today's limits when the bundle is next built; its keychain entry goes.
func TestAnOlderAuthorityIsReplaced(t *testing.T) {
	a, _ := codexTestRelay(t)
	if _, err := a.WriteCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	// Swap the folder's authority for one as an older version made it.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Codex Relay loopback CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, PermittedDNSDomainsCritical: true, PermittedDNSDomains: []string{"localhost"}}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	kb, _ := x509.MarshalPKCS8PrivateKey(key)
	entry, _ := json.Marshal(loopbackCAEntry{Cert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		Key: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}))})
	old := a.Settings().LoopbackCAID
	if err := a.opt.Keychain.Set(loopbackCAUser(old), string(entry)); err != nil {
		t.Fatal(err)
	}
	changed, err := a.RefreshCodexBundle()
	if err != nil || !changed {
		t.Fatalf("refresh: %v %v", changed, err)
	}
	id := a.Settings().LoopbackCAID
	ca, _, err := a.readLoopbackCA(id)
	if id == old || err != nil || !looptls.Current(ca) {
		t.Fatalf("the authority was not replaced: %s -> %s (%v)", old, id, err)
	}
	if _, err := a.opt.Keychain.Get(loopbackCAUser(old)); err == nil {
		t.Fatal("the older authority's keychain entry is left")
	}
	bb, _ := os.ReadFile(filepath.Join(a.ConfigDir(), loopbackBundleFile))
	if !strings.HasSuffix(string(bb), string(ca)) || strings.Contains(string(bb), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))) {
		t.Fatal("the bundle does not hold the new authority alone")
	}
}

// codexTestRelay is a relay over a fresh folder with settings, configuring the Codex home it
// returns, whose system authorities are the test's own.
func codexTestRelay(t *testing.T) (*Relay, string) {
	t.Helper()
	k := testKeychain(t)
	cleanKeychain(t, k)
	fakeSystemRoots(t, testCert(t, "system root"))
	codexHome := t.TempDir()
	a, err := OpenRelay(Options{ConfigDir: t.TempDir(), Keychain: k, Getenv: func(key string) string {
		return map[string]string{"CODEX_HOME": codexHome}[key]
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetLocalKey(true); err != nil {
		t.Fatal(err)
	}
	return a, codexHome
}
