package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// .env lines: others kept, the key replaced wherever and however it is written (a second line
// that sets it dropped), or added; unset takes every line that sets it.
func TestDotenvLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".env")
	for _, c := range []struct{ before, after string }{
		{"", "SSL_CERT_FILE='/b.pem'\n"},
		{"A=1", "A=1\nSSL_CERT_FILE='/b.pem'\n"},
		{"# c\nSSL_CERT_FILE=/old.pem\nB=2\n", "# c\nSSL_CERT_FILE='/b.pem'\nB=2\n"},
		{"  export SSL_CERT_FILE = \"/old.pem\"\r\nSSL_CERT_FILE=/x\n", "SSL_CERT_FILE='/b.pem'\n"},
		{"SSL_CERT_FILE_X=1\n", "SSL_CERT_FILE_X=1\nSSL_CERT_FILE='/b.pem'\n"},
	} {
		os.Remove(p)
		if c.before != "" {
			os.WriteFile(p, []byte(c.before), 0o600)
		}
		d, err := readDotenv(p)
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := d.get("SSL_CERT_FILE"); strings.Contains(c.before, "old.pem") != (v == "/old.pem") {
			t.Errorf("%q: read %q", c.before, v)
		}
		d.set("SSL_CERT_FILE", "/b.pem")
		if _, err := d.save("20260101T000000Z", ""); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != c.after {
			t.Errorf("%q -> %q, want %q", c.before, b, c.after)
		}
		d, _ = readDotenv(p)
		d.unset("SSL_CERT_FILE")
		if strings.Contains(d.text(), "SSL_CERT_FILE=") {
			t.Errorf("%q: unset left %q", c.before, d.text())
		}
	}
	// A value with a quote in it is written so that it reads back.
	d, _ := readDotenv(p)
	d.set("NO_PROXY", "it's")
	if v, _ := d.get("NO_PROXY"); v != "it's" {
		t.Fatalf("read back %q from %q", v, d.text())
	}
}

// NO_PROXY gets the loopback entries it lacks, once each, after what it held.
func TestWithLoopback(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "127.0.0.1,localhost,::1",
		".corp, 127.0.0.1":        ".corp,127.0.0.1,localhost,::1",
		"::1,localhost,127.0.0.1": "::1,localhost,127.0.0.1",
		"*":                       "*,127.0.0.1,localhost,::1",
	} {
		if got := withLoopback(in); got != want {
			t.Errorf("%q -> %q, want %q", in, got, want)
		}
	}
}
