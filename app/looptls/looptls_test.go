package looptls

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func authority(t *testing.T) (certPEM, keyPEM []byte, pool *x509.CertPool) {
	t.Helper()
	certPEM, keyPEM, err := NewCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		t.Fatal("the authority's certificate does not parse")
	}
	return certPEM, keyPEM, pool
}

// One loopback port answers HTTPS with the authority's certificate and plain HTTP alike.
func TestOnePortServesTLSAndPlainHTTP(t *testing.T) {
	certPEM, keyPEM, pool := authority(t)
	leaf, err := Leaf(certPEM, keyPEM, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var cfg atomic.Pointer[tls.Config]
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello "+r.URL.Path)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(Listener(raw, cfg.Load))
	t.Cleanup(func() { srv.Close() })
	addr := raw.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(url string) (string, error) {
		resp, err := client.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	// Before there is a configuration, a TLS client is turned away and plain HTTP still works.
	if _, err := get("https://" + addr + "/x"); err == nil {
		t.Fatal("TLS answered without a configuration")
	}
	cfg.Store(&tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12})
	for _, url := range []string{"https://" + addr + "/backend-api/", "https://localhost:" + port + "/backend-api/", "http://" + addr + "/v1"} {
		got, err := get(url)
		if err != nil || !strings.HasPrefix(got, "hello /") {
			t.Fatalf("%s: %q %v", url, got, err)
		}
	}
}

// The authority vouches for loopback only: a certificate it signs for another name does not
// verify, whoever holds its key.
func TestTheAuthorityVouchesForLoopbackOnly(t *testing.T) {
	certPEM, keyPEM, pool := authority(t)
	ca, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(ca.Certificate[0])
	if !caCert.IsCA || !caCert.PermittedDNSDomainsCritical || len(caCert.PermittedIPRanges) != 2 {
		t.Fatalf("the authority's constraints: %+v %v", caCert.PermittedDNSDomains, caCert.PermittedIPRanges)
	}
	leaf, err := Leaf(certPEM, keyPEM, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	lc, _ := x509.ParseCertificate(leaf.Certificate[0])
	if _, err := lc.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("the serving certificate: %v", err)
	}
	for _, name := range []string{"chatgpt.com", "10.0.0.1"} {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		if ip := net.ParseIP(name); ip != nil {
			tmpl.IPAddresses = []net.IP{ip}
		} else {
			tmpl.DNSNames = []string{name}
		}
		der, err := x509.CreateCertificate(nil, tmpl, caCert, lc.PublicKey, ca.PrivateKey)
		if err != nil {
			t.Fatal(err)
		}
		forged, _ := x509.ParseCertificate(der)
		if _, err := forged.Verify(x509.VerifyOptions{Roots: pool, DNSName: name}); err == nil {
			t.Fatalf("a certificate for %s signed by the loopback authority verified", name)
		}
	}
	if b, _ := pem.Decode(keyPEM); b == nil || b.Type != "PRIVATE KEY" {
		t.Fatal("the key is not PKCS#8 PEM")
	}
}

// Nor does it vouch for an e-mail address or a URI, or for anything but a server: a
// certificate its key signs for those does not verify for the usage it names (nor, for a name
// it excludes, for any usage).
func TestTheAuthorityVouchesForServersOnly(t *testing.T) {
	certPEM, keyPEM, pool := authority(t)
	if !Current(certPEM) {
		t.Fatal("a new authority is not current")
	}
	ca, _ := tls.X509KeyPair(certPEM, keyPEM)
	caCert, _ := x509.ParseCertificate(ca.Certificate[0])
	site, _ := url.Parse("https://chatgpt.com/backend-api/")
	sign := func(tmpl *x509.Certificate) *x509.Certificate {
		tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = big.NewInt(9), time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		der, err := x509.CreateCertificate(nil, tmpl, caCert, caCert.PublicKey, ca.PrivateKey)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c
	}
	for name, c := range map[string]*x509.Certificate{
		"an e-mail (S/MIME) certificate": sign(&x509.Certificate{Subject: pkix.Name{CommonName: "me"},
			EmailAddresses: []string{"me@example.com"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageEmailProtection}}),
		"a server certificate with an e-mail address": sign(&x509.Certificate{IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
			EmailAddresses: []string{"me@example.com"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}),
		"a server certificate with a URI": sign(&x509.Certificate{IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
			URIs: []*url.URL{site}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}),
		"a client certificate for loopback": sign(&x509.Certificate{IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}),
	} {
		usages := [][]x509.ExtKeyUsage{nil, c.ExtKeyUsage}
		if len(c.EmailAddresses)+len(c.URIs) > 0 {
			usages = append(usages, []x509.ExtKeyUsage{x509.ExtKeyUsageAny})
		}
		for _, usage := range usages {
			if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: usage}); err == nil {
				t.Errorf("%s signed by the loopback authority verified (usages %v)", name, usage)
			}
		}
	}
	// An authority made before these limits is told apart, to be replaced.
	old := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Codex Relay loopback CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, PermittedDNSDomainsCritical: true, PermittedDNSDomains: []string{"localhost"}, PermittedIPRanges: loopbackNets}
	der, err := x509.CreateCertificate(nil, old, old, caCert.PublicKey, ca.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if Current(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) || Current(nil) {
		t.Fatal("an authority without the e-mail, URI and usage limits is taken for current")
	}
}

// The cost of telling TLS from plain HTTP, against the bare listener in the same run: a plain
// HTTP request on a new connection each time (the worst case: the first byte is read once per
// connection) and on a kept-alive one.
//
//	go test -run '^$' -bench Listener -benchmem ./app/looptls/
func BenchmarkListener(b *testing.B) {
	for _, wrapped := range []bool{false, true} {
		for _, keepAlive := range []bool{false, true} {
			name := map[bool]string{false: "bare", true: "sniffing"}[wrapped] + "/" + map[bool]string{false: "new-conn", true: "keep-alive"}[keepAlive]
			b.Run(name, func(b *testing.B) {
				raw, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				var ln net.Listener = raw
				if wrapped {
					ln = Listener(raw, func() *tls.Config { return nil })
				}
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
				go srv.Serve(ln)
				defer srv.Close()
				client := &http.Client{Transport: &http.Transport{DisableKeepAlives: !keepAlive}}
				url := "http://" + raw.Addr().String() + "/"
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					resp, err := client.Get(url)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
	}
}
