// Package looptls serves TLS beside plain HTTP on the relay's loopback port, under a
// certificate authority of the settings folder's own. Codex wants an HTTPS ChatGPT origin
// (its chatgpt_base_url) and trusts a local authority only through its environment, so the
// relay makes one that can vouch for this machine's loopback and nothing else: its name
// constraints permit 127.0.0.0/8, ::1 and localhost and exclude every e-mail address and URI,
// and it serves server authentication alone (its extended key usage), which a verifier (Go's,
// rustls', OpenSSL's) enforces on every certificate it signs, whoever holds its key.
//
// One port serves both: a connection whose first byte opens a TLS handshake record is served
// TLS, any other as it came, so that http://127.0.0.1:7455/v1 and https://127.0.0.1:7455/
// backend-api/ are the same relay.
package looptls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"sync"
	"time"
)

// caLife is how long a folder's authority is valid; LeafLife a serving certificate, which a
// relay renews RenewBefore its end (and at each start).
const (
	caLife      = 20 * 365 * 24 * time.Hour
	LeafLife    = 90 * 24 * time.Hour
	RenewBefore = 30 * 24 * time.Hour
)

// loopbackNets are the addresses a certificate of the authority may name.
var loopbackNets = []*net.IPNet{
	{IP: net.IPv4(127, 0, 0, 0).To4(), Mask: net.CIDRMask(8, 32)},
	{IP: net.IPv6loopback, Mask: net.CIDRMask(128, 128)},
}

// NewCA makes an authority for this machine's loopback: its certificate and its key, PEM.
func NewCA(now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:                serial(),
		Subject:                     pkix.Name{CommonName: "Codex Relay loopback CA", Organization: []string{"Codex Relay"}},
		NotBefore:                   now.Add(-time.Hour),
		NotAfter:                    now.Add(caLife),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         []string{"localhost"},
		PermittedIPRanges:           loopbackNets,
		// An empty constraint matches every name of its form: no e-mail address and no URI.
		ExcludedEmailAddresses: []string{""},
		ExcludedURIDomains:     []string{""},
		// What it may vouch for: servers, not e-mail (S/MIME), code or clients.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), nil
}

// Current reports whether the authority's certificate (PEM) has the limits NewCA gives one
// today: an authority made by an older version (which constrained DNS names and addresses
// only) is to be replaced.
func Current(certPEM []byte) bool {
	b, _ := pem.Decode(certPEM)
	if b == nil {
		return false
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return false
	}
	return c.IsCA && len(c.ExtKeyUsage) == 1 && c.ExtKeyUsage[0] == x509.ExtKeyUsageServerAuth &&
		len(c.ExcludedEmailAddresses) == 1 && c.ExcludedEmailAddresses[0] == "" &&
		len(c.ExcludedURIDomains) == 1 && c.ExcludedURIDomains[0] == ""
}

// Leaf signs, with the authority, a serving certificate for 127.0.0.1, ::1 and localhost.
func Leaf(caCertPEM, caKeyPEM []byte, now time.Time) (tls.Certificate, error) {
	ca, err := tls.X509KeyPair(caCertPEM, caKeyPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	until := now.Add(LeafLife)
	if caCert.NotAfter.Before(until) {
		until = caCert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     until,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der, caCert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

// Listener wraps ln: a connection that opens with a TLS handshake is served TLS with the
// configuration config returns then (nil: none yet, and the connection is closed), any other
// as it came. The first byte is read on the connection's first Read or Write, not in Accept,
// so that a silent client holds up no other.
func Listener(ln net.Listener, config func() *tls.Config) net.Listener {
	return &listener{Listener: ln, config: config}
}

type listener struct {
	net.Listener
	config func() *tls.Config
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, config: l.config}, nil
}

// recordHandshake is the first byte of a TLS connection: a handshake record (the ClientHello).
const recordHandshake = 0x16

// errNoTLS is a TLS handshake on a relay that has no authority yet.
var errNoTLS = errors.New("this relay serves no TLS yet: run `codexrelay codex-config --write`")

// conn is an accepted connection until its first byte says what it is, then that.
type conn struct {
	net.Conn
	config func() *tls.Config
	once   sync.Once
	c      net.Conn // what the connection turned out to be (nil: it failed, see err)
	err    error
}

func (c *conn) sniff() {
	c.once.Do(func() {
		var b [1]byte
		n, err := io.ReadFull(c.Conn, b[:])
		if n == 0 {
			c.err = err
			return
		}
		pc := &prefixed{Conn: c.Conn, first: b[:]}
		if b[0] != recordHandshake {
			c.c = pc
			return
		}
		cfg := c.config()
		if cfg == nil {
			c.err = errNoTLS
			c.Conn.Close()
			return
		}
		c.c = tls.Server(pc, cfg)
	})
}

func (c *conn) Read(p []byte) (int, error) {
	if c.sniff(); c.c == nil {
		return 0, c.err
	}
	return c.c.Read(p)
}

func (c *conn) Write(p []byte) (int, error) {
	if c.sniff(); c.c == nil {
		return 0, c.err
	}
	return c.c.Write(p)
}

// Close closes the connection (a TLS one without its close_notify: loopback clients are told
// by the connection's end).
func (c *conn) Close() error { return c.Conn.Close() }

// prefixed is a connection whose first byte, already read, is read again first.
type prefixed struct {
	net.Conn
	first []byte
}

func (p *prefixed) Read(b []byte) (int, error) {
	if len(p.first) > 0 {
		n := copy(b, p.first)
		p.first = p.first[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}
