package app

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestKeychainUnavailableSaysWhatToDo runs the keychain in a child process with no reachable
// D-Bus session: the error must name what to install or unlock, and nothing is written elsewhere.
func TestKeychainUnavailableSaysWhatToDo(t *testing.T) {
	if os.Getenv("CODEXRELAY_KEYCHAIN_CHILD") == "1" {
		err := Keychain{Service: "codexrelay-test-nobus"}.Set("x", "secret-value")
		var ke *KeychainError
		fmt.Printf("is-keychain-error=%v\n%v\n", errors.As(err, &ke), err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestKeychainUnavailableSaysWhatToDo$")
	cmd.Env = append(os.Environ(), "CODEXRELAY_KEYCHAIN_CHILD=1", "DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent/bus")
	out, _ := cmd.CombinedOutput()
	s := string(out)
	if !strings.Contains(s, "is-keychain-error=true") || !strings.Contains(s, "plaintext") ||
		!(strings.Contains(s, "D-Bus") || strings.Contains(s, "Secret Service")) {
		t.Fatalf("child said:\n%s", s)
	}
	if strings.Contains(s, "secret-value") {
		t.Fatal("the error shows the secret")
	}
}
