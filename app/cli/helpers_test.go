package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/app"
)

// testOptions opens the app on a settings folder of the test's own, with no keychain and no
// environment.
func testOptions(t *testing.T) app.Options {
	return app.Options{ConfigDir: t.TempDir(), AutostartDir: t.TempDir(), Getenv: func(string) string { return "" }}
}

// runCLI runs `codexrelay args...` with stdin and returns its exit code and output.
func runCLI(t *testing.T, opt app.Options, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	c := &CLI{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Options: opt}
	code = c.Run(args)
	return code, out.String(), errb.String()
}

// testKeychain is the real Secret Service under a service name of the test's own, emptied after
// the test (`make test` runs the tests inside a private D-Bus session with gnome-keyring).
func testKeychain(t *testing.T) app.Keychain {
	t.Helper()
	if os.Getenv("CODEXRELAY_TEST_KEYRING") == "" && os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		t.Skip("no Secret Service: run `make test`, which starts gnome-keyring in a private D-Bus session")
	}
	var b [6]byte
	rand.Read(b[:])
	k := app.Keychain{Service: "codexrelay-test-" + hex.EncodeToString(b[:])}
	if err := k.Set("probe", "x"); err != nil {
		t.Fatalf("the Secret Service does not work: %v", err)
	}
	k.Delete("probe")
	t.Cleanup(func() {
		users, _ := k.List()
		for _, u := range users {
			k.Delete(u)
		}
	})
	return k
}
